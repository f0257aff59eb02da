"""The differential report: JSON, markdown and tables, rendered again from the JSON by ``csconform report``."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from csconform.errors import CsConformError
from csconform.report.sections import SECTIONS, ReportOptions, render_report
from csconform.testing.differential.campaign import PROFILES, run_campaign
from csconform.testing.differential.explore import Pair
from csconform.testing.differential.report import read_report, report_data, triage_skeleton, write_report
from csconform.testing.differential.verdicts import judge
from csconform.triage import load_triage

HALVED = Pair("csconform.engine", "tests.meta.differential_wrappers.scaler_starts_halved")


@pytest.fixture(scope="module")
def data() -> dict:
    campaign = run_campaign(
        HALVED, PROFILES["ci"], areas=["grad_scaler", "data"], seeds=(0,), examples=10, shrink_examples=20
    )
    return report_data(campaign, judge(campaign, None), None)


def test_the_json_holds_areas_classes_and_repros(tmp_path: Path, data: dict) -> None:
    files = write_report(tmp_path, data)
    assert [f.name for f in files] == [
        "differential_scaler_starts_halved.json",
        "differential_scaler_starts_halved.md",
        "differential_scaler_starts_halved_areas.csv",
        "differential_scaler_starts_halved_classes.csv",
    ]
    report = read_report(files[0])
    assert not report["passed"] and report["summary"]["verdicts"]["untriaged"] == len(report["classes"]) > 0
    areas = {area["area"]: area for area in report["areas"]}
    assert areas["grad_scaler"]["examples"] == 10 and areas["data"]["classes"] == 0
    row = report["classes"][0]
    assert row["repro"].startswith("import importlib") and row["statements"][-1] in row["repro"]
    page = files[1].read_text()
    assert "## Areas" in page and f"### 1. {row['signature']}" in page and "```python" in page
    assert list(pd.read_csv(files[3])["verdict"]) == ["untriaged"] * len(report["classes"])


def test_the_report_section_renders_the_cstorch_json(tmp_path: Path, data: dict) -> None:
    (tmp_path / "differential_cstorch.json").write_text(json.dumps({**data, "against": "csconform.adapters.cstorch"}))
    (section,) = [s for s in SECTIONS if s.name == "differential"]
    (result,) = render_report(ReportOptions(out=tmp_path, engine="csconform.engine"), [section])
    assert result.status == "rendered"
    assert (tmp_path / "differential_cstorch.md").read_text().startswith("# Differential: csconform.adapters.cstorch")


def test_a_file_that_is_not_a_report_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "differential_cstorch.json"
    path.write_text("{}")
    with pytest.raises(CsConformError, match="not a differential report"):
        read_report(path)


def test_the_printed_skeleton_of_an_untriaged_class_is_an_entry_of_the_differential_section(
    tmp_path: Path, data: dict
) -> None:
    """Pasted under ``differential:`` with a verdict chosen and the cause located, it loads with its repro."""
    row = data["classes"][0]
    skeleton = triage_skeleton(row)
    verdicts = skeleton.split("verdict: ", 1)[1].splitlines()[0]
    assert verdicts.split("|") == [
        "departs-from-docs",
        "reference-choice",
        "spec-claims-too-much",
        "not-observable",
        "our-bug",
    ]
    filled = skeleton.replace(verdicts, "departs-from-docs").replace("file:line in", "wrapper.py:1 in")
    path = tmp_path / "triage.yaml"
    path.write_text(f"implementation: a.b\npackage: a\nversion: '1'\ndifferential:\n{filled}\n", encoding="utf-8")
    (entry,) = load_triage(path).differential
    assert str(entry.signature) == row["signature"] and list(entry.repro.source) == row["statements"]
