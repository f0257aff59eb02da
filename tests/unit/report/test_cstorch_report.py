"""The vendor's matrix beside ours (csconform/report/cstorch.py): levels, side by side, triage table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from csconform.errors import CsConformError, UnreadableDocumentError
from csconform.report.cstorch import (
    MATRIX_FILE,
    PRODUCED_BY,
    REFERENCE_MATRIX_FILE,
    expectations_section,
    main,
    read_matrix,
    write_cstorch_report,
)
from csconform.spec import LEVELS, load_spec
from csconform.spec.verdict import levels_summary

TRIAGE = """\
implementation: csconform.adapters.cstorch
package: cerebras-pytorch
version: "2.10.0"
rules:
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
    assert set(levels["implementation"]) == {"cerebras-pytorch 2.10.0", "reference engine"}
    assert len(levels) == 2 * len(LEVELS)
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert "it keeps going at the minimum scale" in page and "amp/grad_scaler.py:1" in page
    assert "does not conform" in page  # GRADSCALER-007 is public and does not pass
    assert "This matrix was written without a triage file" in page


def test_the_page_names_the_stale_expectations_of_the_run(tmp_path):
    matrix = _matrix("vendor", {})
    matrix["expected_failures"] = {
        "file": "/somewhere/triage.yaml",
        "release": "cerebras-pytorch 2.10.0",
        "entries": 2,
        "unexpected_passes": {"csconform/conformance/test_x.py::test_y[1]": ["X-001"]},
        "unmatched": ["csconform/conformance/test_x.py::test_gone"],
        "stale": 2,
    }
    _write(tmp_path, MATRIX_FILE, matrix)
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert "2 entries of `triage.yaml`, the verdicts for cerebras-pytorch 2.10.0" in page
    assert "- `csconform/conformance/test_x.py::test_y[1]` passed although expected to fail (X-001)" in page
    assert "- `csconform/conformance/test_x.py::test_gone` matches no test" in page


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


def test_the_command_writes_the_page_and_prints_what_it_wrote(tmp_path, capsys, monkeypatch):
    _write(tmp_path, MATRIX_FILE, _matrix("vendor", {}))
    assert main(["--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [
        str(tmp_path / name)
        for name in ("conformance_cstorch.csv", "conformance_cstorch_levels.csv", "conformance_cstorch.md")
    ]
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2 and "the following arguments are required: --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "write conformance_cstorch.md from the matrices in --out" in usage
    assert f"--out OUT the folder holding {MATRIX_FILE}" in usage


TRIAGE_SEVERAL = """\
implementation: csconform.adapters.cstorch
package: cerebras-pytorch
version: "2.10.0"
rules:
  - ids: [GRADSCALER-024, GRADSCALER-007]
    verdict: reference-choice
    finding: two rules at once
    evidence: amp/grad_scaler.py:1
    resolution: informative
  - ids: ["csconform/conformance/test_grad_scaler.py::test_mismatched_state_is_refused"]
    verdict: departs-from-docs
    finding: and a second verdict, through a test of the rule
    evidence: amp/grad_scaler.py:2
    resolution: expected failure
  - ids: ["csconform/conformance/test_grad_scaler.py::test_that_no_longer_exists"]
    verdict: departs-from-docs
    finding: a test that is gone
    evidence: none
    resolution: stale
"""


def test_several_verdicts_reasons_and_ids_are_listed_in_one_cell(tmp_path):
    vendor = _matrix("vendor", {"APPLIANCE-001": "unsupported"})
    vendor["rules"]["APPLIANCE-001"]["unsupported_reasons"] = ["no appliance", "no cluster"]
    _write(tmp_path, MATRIX_FILE, vendor)
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE_SEVERAL, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    rules = pd.read_csv(tmp_path / "conformance_cstorch.csv", keep_default_na=False).set_index("rule")
    assert rules.loc["GRADSCALER-024", "triage"] == "reference-choice, departs-from-docs"
    assert rules.loc["GRADSCALER-007", "triage"] == "reference-choice"
    assert rules.loc["APPLIANCE-001", "unsupported because"] == "no appliance; no cluster"
    assert list(rules.reset_index().columns) == [
        "rule",
        "level",
        "title",
        "reference engine",
        "cerebras.pytorch",
        "emulated",
        "triage",
        "unsupported because",
    ]
    assert list(pd.read_csv(tmp_path / "conformance_cstorch_levels.csv").columns)[:3] == [
        "implementation",
        "level",
        "applicable",
    ]
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert re.search(r"\| GRADSCALER-024, GRADSCALER-007 +\| reference-choice +\|", page)
    assert page.startswith("# Conformance of cerebras-pytorch 2.10.0\n\n")
    assert "Produced by `tox -e cstorch`; the reference engine's column is `conformance.json` (not in this " in page
    assert "folder: run csconform report)." in page


def test_a_conforming_vendor_is_said_to_conform_and_our_column_is_named(tmp_path):
    _write(tmp_path, MATRIX_FILE, _matrix("vendor", {}))
    _write(tmp_path, REFERENCE_MATRIX_FILE, _matrix("reference", {}))
    triage = tmp_path / "triage.yaml"
    triage.write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert "On the binding levels (documented, public) it conforms, counting" in page
    assert "the reference engine's column is `conformance.json`.\n" in page
    (tmp_path / REFERENCE_MATRIX_FILE).write_text('{"engine": "old", "rules": {}}', encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=triage)
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    assert "`conformance.json` (the one in this folder has no per-level results: run csconform report).\n" in page


def test_the_expected_failures_section_lists_every_stale_expectation_and_its_verdicts():
    """The section as a reader sees it: heading, the list's size, file and release, every stale entry."""
    expected = {
        "file": "/somewhere/triage.yaml",
        "release": "cerebras-pytorch 2.10.0",
        "entries": 3,
        "unexpected_passes": {"t.py::a": ["X-001", "X-002"], "t.py::b": ["X-003"]},
        "unmatched": ["t.py::gone"],
    }
    assert expectations_section({"expected_failures": expected}) == (
        "## Expected failures\n\n"
        "3 entries of `triage.yaml`, the verdicts for cerebras-pytorch 2.10.0. "
        "Stale expectations (each fails the run):\n\n"
        "- `t.py::a` passed although expected to fail (X-001, X-002)\n"
        "- `t.py::b` passed although expected to fail (X-003)\n"
        "- `t.py::gone` matches no test\n\n"
    )
    only_unmatched = {k: v for k, v in expected.items() if k != "unexpected_passes"}
    assert expectations_section({"expected_failures": only_unmatched}).endswith(
        "(each fails the run):\n\n- `t.py::gone` matches no test\n\n"
    )
    only_passes = {k: v for k, v in expected.items() if k != "unmatched"}
    assert expectations_section({"expected_failures": only_passes}).endswith("(X-003)\n\n")
    unsupported = {**only_passes, "not_applied": {"X-004": 2}}
    assert expectations_section({"expected_failures": unsupported}).endswith(
        "(X-003)\n- `X-004` failed in no test: its 2 test(s) were skipped or unsupported\n\n"
    )
    observed = {**only_passes, "observed": {"t.py::c": ["X-005"]}}
    assert expectations_section({"expected_failures": observed}).endswith(
        "(X-003)\n- `t.py::c` passed although its verdict says it cannot be observed (X-005)\n\n"
    )


def test_an_expected_failures_block_without_stale_entries_or_details_says_so():
    assert expectations_section({"expected_failures": {}}) == (
        "## Expected failures\n\n"
        "0 entries of ``, the verdicts for an unversioned list. Stale expectations (each fails the run):\n\n"
        "None: every expected failure failed, and every entry matched a test.\n\n"
    )


def test_a_matrix_that_is_missing_or_not_a_matrix_says_how_to_produce_it(tmp_path):
    missing = tmp_path / "absent.json"
    with pytest.raises(UnreadableDocumentError) as unreadable:  # the reader's template: tests/unit/files
        read_matrix(missing)
    assert unreadable.value.source == str(missing) and "conformance matrix (JSON)" in str(unreadable.value)
    broken = tmp_path / MATRIX_FILE
    broken.write_text('{"rules": {}}', encoding="utf-8")
    with pytest.raises(CsConformError) as refused:
        read_matrix(broken)
    assert str(refused.value) == (
        f"{broken}: not a conformance matrix with per-level results (rerun: {PRODUCED_BY}): no 'engine' or 'levels'"
    )
