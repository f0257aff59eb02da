"""``csconform check`` runs the suite in a subprocess and prints the matrix; errors are clear."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from csconform.cli import main
from csconform.errors import CsConformError
from csconform.report.conformance import run_conformance
from csconform.spec import load_spec


def test_check_one_area_against_the_reference_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix_path = tmp_path / "matrix.json"
    assert main(["check", "--area", "precision", "--json", str(matrix_path)]) == 0
    out = capsys.readouterr().out
    assert "PRECISION-001" in out and "csconform.engine:" in out
    matrix = json.loads(matrix_path.read_text())
    precision = {k: v for k, v in matrix["rules"].items() if k.startswith("PRECISION-") and v["tests"]}
    assert precision and all(v["outcome"] == "passed" for v in precision.values())
    # a rule outside the selection is not "skipped": it is not shown, nor counted
    assert matrix["areas"] == ["precision"] and all(v["tests"] for v in matrix["rules"].values())
    assert "PRECISION-019" in matrix["checked_elsewhere"] and "checked by other areas' files: PRECISION-019" in out
    assert "skipped" not in out and "GRADSCALER-" not in out
    assert f"csconform.engine: {len(matrix['rules'])} rules" in out


def test_unknown_area_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--area", "nowhere"]) == 2
    err = capsys.readouterr().err  # the wording is pinned in tests/unit/report/test_run_conformance.py
    assert len(err.strip().splitlines()) == 1 and "nowhere" in err and "precision" in err


def test_unimportable_engine_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--area", "precision", "--engine", "no_such_engine"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "csconform: error: engine: cannot import the implementation 'no_such_engine': no module named 'no_such_engine'"
    ]


def test_expected_failures_reach_the_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken engine's failing rule, listed with --expected-failures, is an expected failure: the run
    passes and the matrix says xfailed (the option reaches the pytest run, read and checked first)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[3])  # where tests.meta.broken_engines imports
    monkeypatch.setenv("CI", "1")
    listed = tmp_path / "expected.txt"
    listed.write_text(  # the broken engine accepts a dict of metrics (its other tests of METRICS-001 pass)
        "csconform/conformance/test_metrics.py::test_several_values_refused_on_cs[dict]\n", encoding="utf-8"
    )
    command = ["check", "--area", "metrics", "--engine", "tests.meta.broken_engines.accepts_dict_metrics"]
    assert main([*command, "--expected-failures", str(listed), "--json", str(tmp_path / "m.json")]) == 0
    matrix = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert matrix["rules"]["METRICS-001"]["outcome"] == "xfailed"
    listed.write_bytes(b"\xff\xfe\x00M")  # refused before the suite starts
    assert main([*command, "--expected-failures", str(listed)]) == 2


def test_without_areas_the_whole_suite_is_the_run() -> None:
    """No area: the run collects the whole suite (-k picks one of its tests); every rule in force is listed."""
    matrix = run_conformance(
        "csconform.engine", pytest_args=("-k", "test_amp_offers_the_three_entry_points"), echo=False
    )
    spec = load_spec()
    assert matrix["engine"] == "csconform.engine"
    assert set(matrix["rules"]) == {rule.id for rule in spec.active()}
    assert matrix["rules"]["GRADSCALER-001"]["outcome"] == "passed"
    assert {entry["outcome"] for rule_id, entry in matrix["rules"].items() if rule_id != "GRADSCALER-001"} == {
        "skipped",
        "pending",
    }


def test_a_run_that_stops_before_its_tests_is_an_error_not_an_empty_matrix(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Not echoed (``echo=False``), pytest's own complaint is quoted in the error; echoed, it went to the terminal."""
    with pytest.raises(CsConformError, match="stopped before running its tests") as stopped:
        run_conformance("csconform.engine", areas=["precision"], pytest_args=("no/such/file.py",), echo=False)
    assert "'csconform.engine'" in str(stopped.value)  # the wording is pinned in test_run_conformance.py
    assert "file or directory not found: no/such/file.py" in str(stopped.value)
    assert "no/such/file.py" not in capfd.readouterr().out
    with pytest.raises(CsConformError, match="stopped before running its tests") as echoed:
        run_conformance("csconform.engine", areas=["precision"], pytest_args=("no/such/file.py",), echo=True)
    assert "no/such/file.py" not in str(echoed.value)
    assert "file or directory not found: no/such/file.py" in "".join(capfd.readouterr())
    with pytest.raises(CsConformError, match="stopped before running its tests") as by_default:
        run_conformance("csconform.engine", areas=["precision"], pytest_args=("no/such/file.py",))
    assert "no/such/file.py" not in str(by_default.value)  # echoed unless told otherwise
    assert "file or directory not found: no/such/file.py" in "".join(capfd.readouterr())


def test_a_verdict_that_no_longer_holds_fails_check_within_an_area(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference engine passes METRICS-001's tests: an entry expecting them to fail is stale, and so
    is an entry for a test of the metrics file that is gone; an entry for another area's rule is not
    judged (its tests did not run)."""
    listed = tmp_path / "expected.txt"
    gone = "csconform/conformance/test_metrics.py::test_gone"
    listed.write_text(f"METRICS-001\nGRADSCALER-016\n{gone}\n", encoding="utf-8")
    assert main(["check", "--area", "metrics", "--expected-failures", str(listed)]) == 1
    out = capsys.readouterr().out
    # what the lines name; their wording is pinned in tests/meta/test_traceability.py
    (counts,) = [line for line in out.splitlines() if str(listed) in line and "STALE" not in line]
    assert re.findall(r"\d+", counts.split(str(listed))[1]) == ["3", "9"]  # entries, stale
    stale = [line for line in out.splitlines() if line.startswith("STALE") and str(listed) in line]
    assert any("test_metrics.py::test_several_values_refused_on_cs[dict]" in s and "(METRICS-001)" in s for s in stale)
    assert any(gone in s for s in stale)
    assert "GRADSCALER-016" not in out


TRIAGE = """\
implementation: csconform.engine
package: csconform
version: "{version}"
rules:
  - ids: [METRICS-001]
    verdict: departs-from-docs
    finding: it passes
    evidence: observed
    resolution: none
"""


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (("implementation: csconform.engine", "implementation: my_runtime.adapter"), "my_runtime.adapter"),
        (('version: "{version}"', 'version: "0.0.1"'), "csconform 0.0.1"),
        (('version: "{version}"', "version: 2.10"), "quote it"),
        (
            (
                "rules:\n",
                "rules:\n  - ids: [METRICS-001]\n    verdict: not-observable\n    finding: x\n    evidence: y\n"
                "    resolution: z\n",
            ),
            "METRICS-001",
        ),
    ],
    ids=["other-implementation", "other-release", "unquoted-version", "two-verdicts"],
)
def test_a_triage_that_is_not_this_runs_is_refused_before_the_suite_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], named: str
) -> None:
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE.replace(*change).format(version=metadata.version("csconform")), encoding="utf-8")
    assert main(["check", "--area", "metrics", "--expected-failures", str(triage)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"csconform: error: {triage}") and named in line
