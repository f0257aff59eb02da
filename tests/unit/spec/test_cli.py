"""``csconform spec ...`` on a small spec directory: tables, one rule, validation exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_spec import VALID_AREA

from csconform.cli import main


def test_list_shows_every_rule_with_its_status(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "list"]) == 0
    out = capsys.readouterr().out
    assert "DEMO-001" in out and "DEMO-002" in out and "pending" in out
    assert "2 of 2 rules shown; spec: 1 checked, 1 pending, 0 retired" in out
    assert "in force: 1 documented, 1 public, 0 reference" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["id"] == ["id", "title", "source", "level", "status", "checks"]
    assert rows["DEMO-002"][-3:-1] == ["public", "pending"]


def test_list_filters_by_status_and_area(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "list", "--status", "pending", "--area", "demo"]) == 0
    out = capsys.readouterr().out
    assert "DEMO-002" in out and "DEMO-001" not in out


def test_list_filters_by_level(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "list", "--level", "public"]) == 0
    out = capsys.readouterr().out
    assert "DEMO-002" in out and "DEMO-001" not in out and "1 of 2 rules shown" in out
    assert main(["spec", "--specs-dir", str(spec_dir), "list", "--level", "reference"]) == 0
    assert "0 of 2 rules shown" in capsys.readouterr().out


def test_unknown_level_is_refused_by_the_command_line(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["spec", "--specs-dir", str(spec_dir), "list", "--level", "normative"])
    assert exited.value.code == 2
    (refusal,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]  # argparse words it
    assert "--level" in refusal and "normative" in refusal
    assert all(level in refusal for level in ("documented", "public", "reference"))


def test_unknown_area_is_a_clear_error(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "list", "--area", "nowhere"]) == 2
    assert "unknown area 'nowhere'; known areas: demo" in capsys.readouterr().err


def test_show_prints_the_rule(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "show", "DEMO-002"]) == 0
    out = capsys.readouterr().out
    assert "pending — not yet checkable" in out
    assert "\nlevel      public\n" in out
    assert "pytorch-limitations#Weight Streaming mode" in out and "public-facts#LR schedules" in out


def test_show_unknown_rule(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "show", "DEMO-404"]) == 2
    assert "unknown rule id 'DEMO-404'" in capsys.readouterr().err


def test_check_reports_problems_and_uncovered_sections(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--specs-dir", str(spec_dir), "check"]) == 1
    out = capsys.readouterr().out
    assert "no active rule cites estimator-limitations#TF Env Config" in out
    (spec_dir / "demo.yaml").write_text(VALID_AREA.replace("kind: limitation", "kind: wish"), encoding="utf-8")
    assert main(["spec", "--specs-dir", str(spec_dir), "check"]) == 1
    assert "rule DEMO-001: kind 'wish'" in capsys.readouterr().out
    (spec_dir / "demo.yaml").write_text(VALID_AREA.replace("    level: public\n", ""), encoding="utf-8")
    assert main(["spec", "--specs-dir", str(spec_dir), "check"]) == 1
    problem = next(line for line in capsys.readouterr().out.splitlines() if "DEMO-002" in line)
    assert "'level'" in problem  # the wording is checked in test_loader.py


def test_repository_spec_passes_its_own_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "spec OK" in out and "in force: " in out and " documented, " in out and " reference)" in out


def test_an_unwritable_output_path_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert main(["sweep", "--models", "fc_mnist", "--out", str(blocker / "sweep"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("csconform: error: ") and "Traceback" not in err and str(blocker) in err
