"""Outputs never land on an input or on each other, and nothing a command is pointed at is dropped
unseen: the implementation's own source, two outputs naming one file, a dangling link or a pipe in a
validated folder, a table format or a set of areas that would give nonsense."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from csconform.cli import main
from csconform.errors import InvalidInputError
from csconform.interface.load import implementation_sources
from csconform.testing.differential.campaign import PROFILES, run_campaign
from csconform.testing.differential.explore import Pair

LACKS_DATA = """\
import csconform.engine as _engine

CAPABILITIES = _engine.CAPABILITIES - {"data"}


def __getattr__(name):
    return getattr(_engine, name)
"""


@pytest.fixture
def module_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_sources_of_a_module_or_package_are_found_without_importing_it(module_folder: Path) -> None:
    (module_folder / "loud.py").write_text("raise SystemExit('imported')\n", encoding="utf-8")
    package = module_folder / "runtime" / "adapter"
    package.mkdir(parents=True)
    for file in (package.parent / "__init__.py", package / "__init__.py", package / "ops.py"):
        file.write_text("raise SystemExit('imported')\n", encoding="utf-8")
    assert implementation_sources("loud") == [module_folder / "loud.py"]
    assert implementation_sources("runtime.adapter") == [package / "__init__.py", package / "ops.py"]
    assert implementation_sources("runtime.absent") == [] and "runtime" not in sys.modules


def test_check_refuses_to_write_its_matrix_over_the_implementation_it_checks(
    module_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = module_folder / "impl.py"
    source.write_text(LACKS_DATA, encoding="utf-8")
    before = source.read_bytes()
    assert main(["check", "--engine", "impl", "--area", "metrics", "--json", "impl.py"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--json impl.py is the input --engine" in line and source.read_bytes() == before


def test_plan_refuses_two_outputs_that_name_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = tmp_path / "plan.png"
    assert main(["plan", "--model", "fc_mnist", "--json", str(both), "--png", str(both)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--png and --json name one file" in line and not both.exists()


@pytest.mark.parametrize(("first", "second"), [("--plot", "--json"), ("--plot", "--output"), ("--json", "--output")])
def test_validate_refuses_two_outputs_that_name_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str
) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("train_input: {batch_size: 8}\nrunconfig: {max_steps: 10}\n", encoding="utf-8")
    out = tmp_path / "out.png"
    assert main(["validate", str(params), "--no-plan", first, str(out), second, str(out)]) == 2
    assert "both name" in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_dangling_link_or_a_pipe_in_a_validated_folder_gets_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "params.yaml").write_text("train_input: {batch_size: 8}\nrunconfig: {max_steps: 10}\n")
    (tmp_path / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    assert main(["validate", str(tmp_path), "--no-plan", "--format", "json"]) == 2
    outcomes = {Path(f["file"]).name: f["outcome"] for f in json.loads(capsys.readouterr().out)["files"]}
    assert outcomes.keys() == {"dangling.yaml", "params.yaml", "pipe.yaml"} and outcomes["params.yaml"] != "unreadable"
    assert outcomes["dangling.yaml"] == outcomes["pipe.yaml"] == "unreadable"


def test_spec_list_refuses_a_table_format_tabulate_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["spec", "list", "--format", "bogus"])
    assert stopped.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_a_campaign_over_areas_the_implementations_cannot_both_run_is_refused(module_folder: Path) -> None:
    (module_folder / "lacks_data.py").write_text(LACKS_DATA, encoding="utf-8")
    with pytest.raises(InvalidInputError, match="lacks_data does not declare data"):
        run_campaign(Pair("csconform.engine", "lacks_data"), PROFILES["ci"], areas=["data"], examples=1)
