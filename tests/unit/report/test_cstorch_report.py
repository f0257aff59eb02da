"""The vendor's matrix beside ours (csconform/report/cstorch.py): levels, side by side, triage table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from csconform.errors import CsConformError
from csconform.report.cstorch import MATRIX_FILE, REFERENCE_MATRIX_FILE, main, write_cstorch_report
from csconform.spec import LEVELS, load_spec
from csconform.spec.verdict import levels_summary

TRIAGE = """\
implementation: a package under test
entries:
  - ids: [GRADSCALER-024]
    verdict: reference-choice
    finding: it keeps going at the minimum scale
    evidence: amp/grad_scaler.py:1
    resolution: informative
  - ids: ["csconform/conformance/test_grad_scaler.py::test_update_with_new_scale_is_refused[8.0]"]
    verdict: departs-from-docs
    finding: it accepts a new scale
    evidence: observed
    resolution: expected failure
"""


def _matrix(engine: str, outcomes: dict[str, str]) -> dict:
    spec = load_spec()
    rules = {rule.id: {"outcome": outcomes.get(rule.id, "passed"), "tests": 1} for rule in spec}
    return {"engine": engine, "rules": rules, "levels": levels_summary(spec, rules)}


def _write(folder: Path, name: str, matrix: dict) -> None:
    (folder / name).write_text(json.dumps(matrix), encoding="utf-8")


def test_both_matrices_side_by_side_with_triage_verdicts(tmp_path):
    vendor = {"GRADSCALER-024": "xfailed", "GRADSCALER-007": "xfailed", "APPLIANCE-001": "unsupported"}
    _write(tmp_path, MATRIX_FILE, _matrix("vendor", vendor))
    _write(tmp_path, REFERENCE_MATRIX_FILE, _matrix("reference", {}))
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    rules = pd.read_csv(tmp_path / "conformance_cstorch.csv").set_index("rule")
    assert rules.loc["GRADSCALER-024", "cerebras.pytorch"] == "xfailed"
    assert rules.loc["GRADSCALER-024", "reference engine"] == "passed"
    assert rules.loc["GRADSCALER-024", "triage"] == "reference-choice"
    assert rules.loc["GRADSCALER-007", "triage"] == "departs-from-docs"  # reached through its test's id
    assert rules.loc["APPLIANCE-001", "cerebras.pytorch"] == "unsupported"
    levels = pd.read_csv(tmp_path / "conformance_cstorch_levels.csv")
    assert set(levels["implementation"]) == {"cerebras.pytorch 2.10.0", "reference engine"}
    assert len(levels) == 2 * len(LEVELS)
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert "it keeps going at the minimum scale" in page and "amp/grad_scaler.py:1" in page
    assert "does not conform" in page  # GRADSCALER-007 is public and does not pass


def test_without_our_matrix_the_page_says_where_it_comes_from(tmp_path):
    _write(tmp_path, MATRIX_FILE, _matrix("vendor", {}))
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    assert "not in this folder" in (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert pd.read_csv(tmp_path / "conformance_cstorch.csv")["reference engine"].isna().all()


@pytest.mark.parametrize("text", ["not json", "[]", '{"rules": {}}'])
def test_a_broken_matrix_is_a_clear_error(tmp_path, text, capsys):
    (tmp_path / MATRIX_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(CsConformError, match=MATRIX_FILE):
        write_cstorch_report(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path)])
    assert exited.value.code == 1 and MATRIX_FILE in capsys.readouterr().err


def test_our_matrix_from_an_older_csconform_is_left_out_with_a_note(tmp_path):
    _write(tmp_path, MATRIX_FILE, _matrix("vendor", {}))
    (tmp_path / REFERENCE_MATRIX_FILE).write_text('{"engine": "old", "rules": {}}', encoding="utf-8")
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    assert "has no per-level results" in (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
