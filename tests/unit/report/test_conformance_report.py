"""Every number on the conformance pages against the JSON they are built from.

A matrix with every outcome (and a spread of test counts and emulations) goes through
``write_conformance_report`` and ``write_cstorch_report``; the pages' tables are read back by their
headings and column labels (``markdown_tables``) and compared with the JSON, cell by cell.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from markdown_tables import number, tables

from csconform.errors import InputFileError
from csconform.report.conformance import (
    MATRIX_COLUMNS,
    OUTCOMES,
    area_frame,
    check_matrix,
    level_lines,
    matrix_frame,
    selected,
    summary_line,
    write_conformance_report,
)
from csconform.report.cstorch import MATRIX_FILE, REFERENCE_MATRIX_FILE, write_cstorch_report
from csconform.spec import LEVELS, load_spec
from csconform.spec.verdict import levels_summary

SPEC = load_spec()
RUN_OUTCOMES = ("passed", "failed", "xfailed", "unsupported", "skipped")


def _matrix(engine: str, shift: int) -> dict:
    """Every active rule with an outcome (pending rules stay pending), varied by ``shift``."""
    rules: dict[str, dict] = {}
    for index, rule in enumerate(SPEC.active()):
        if rule.status == "pending":
            rules[rule.id] = {"outcome": "pending", "tests": 0}
            continue
        outcome = RUN_OUTCOMES[(index * 7 + shift) % len(RUN_OUTCOMES)]
        tests = 1 + (index + shift) % 4
        entry: dict = {"outcome": outcome, "tests": tests, outcome: tests}
        if index % 5 == shift % 5:
            entry["emulated"] = ["amp", "optim"][: 1 + index % 2]
        if outcome == "unsupported":
            entry["unsupported_reasons"] = [f"no capability {index}"]
        rules[rule.id] = entry
    return {"engine": engine, "spec_rules": len(rules), "rules": rules, "levels": levels_summary(SPEC, rules)}


def test_the_matrix_page_shows_the_json_it_writes(tmp_path: Path) -> None:
    matrix = _matrix("some.engine", 0)
    write_conformance_report(tmp_path, matrix)
    assert json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8")) == matrix
    page = (tmp_path / "conformance.md").read_text(encoding="utf-8")
    rules = matrix["rules"]
    outcomes = Counter(entry["outcome"] for entry in rules.values())
    assert all(outcomes[o] for o in OUTCOMES), "the fixture should hold every outcome"
    summary = ", ".join(f"{outcomes[o]} {o}" for o in OUTCOMES)
    assert f"some.engine: {len(rules)} rules — {summary}." in page

    found = tables(page)
    by_area = {row["area"]: row for row in found["By area"]}
    assert set(by_area) == {rule.area for rule in SPEC.active()}
    for area, row in by_area.items():
        counts = Counter(rules[r.id]["outcome"] for r in SPEC.active() if r.area == area)
        assert {o: number(row[o]) for o in OUTCOMES} == {o: counts[o] for o in OUTCOMES}, area
        assert number(row["rules"]) == sum(counts.values())

    by_rule = {row["rule"]: row for row in found["By rule"]}
    assert set(by_rule) == set(rules)
    for rule_id, row in by_rule.items():
        rule, entry = SPEC.get(rule_id), rules[rule_id]
        assert (row["area"], row["level"], row["title"]) == (rule.area, rule.level, rule.title)
        assert (row["outcome"], number(row["tests"])) == (entry["outcome"], entry["tests"])
        assert row["emulated"] == ", ".join(entry.get("emulated", ()))

    csv = pd.read_csv(tmp_path / "conformance.csv", keep_default_na=False).set_index("rule")
    for rule_id, entry in rules.items():
        assert (csv.loc[rule_id, "outcome"], csv.loc[rule_id, "tests"]) == (entry["outcome"], entry["tests"])
    by_area_csv = pd.read_csv(tmp_path / "conformance_by_area.csv").set_index("area")
    for area, row in by_area.items():
        assert by_area_csv.loc[area, "rules"] == number(row["rules"])


def test_the_frames_are_labelled_by_what_they_hold() -> None:
    matrix = _matrix("e", 3)
    frame = matrix_frame(matrix, SPEC)
    assert list(frame.columns) == ["rule", "area", "level", "title", "outcome", "tests", "emulated"]
    assert list(frame["rule"]) == sorted(matrix["rules"])
    areas = area_frame(matrix, SPEC)
    assert list(areas.columns) == ["area", *OUTCOMES, "rules"]
    assert areas["rules"].sum() == len(matrix["rules"])
    assert (areas[list(OUTCOMES)].sum(axis=0) == pd.Series(Counter(frame["outcome"]))[list(OUTCOMES)]).all()


def test_the_summary_and_level_lines_count_from_the_json() -> None:
    matrix = _matrix("e", 1)
    counts = Counter(entry["outcome"] for entry in matrix["rules"].values())
    assert summary_line(matrix) == f"e: {len(matrix['rules'])} rules — " + ", ".join(
        f"{counts[o]} {o}" for o in OUTCOMES if counts[o]
    )
    lines = level_lines(matrix)
    for level, line in zip(LEVELS, lines, strict=False):
        entry = matrix["levels"][level]
        role = "binding" if level != "reference" else "informative"
        outcomes = ", ".join(f"{n} {o}" for o, n in entry["outcomes"].items())
        assert (
            line == f"  {level} ({role}): {entry['passed']} of {entry['applicable']} applicable rules pass ({outcomes})"
        )
    assert lines[-1] == "e does not conform: every applicable documented and public rule must pass"
    assert len(lines) == len(LEVELS) + 1


def test_a_conforming_matrix_says_so() -> None:
    rules = {
        rule.id: {"outcome": "pending" if rule.status == "pending" else "passed", "tests": 1} for rule in SPEC.active()
    }
    rules[next(r.id for r in SPEC.active() if r.level == "reference" and r.status == "checked")]["outcome"] = "failed"
    matrix = {"engine": "e", "rules": rules, "levels": levels_summary(SPEC, rules)}
    assert level_lines(matrix)[-1].startswith("e conforms: ")  # wording: the summary test
    assert level_lines({"engine": "e", "rules": rules}) == []  # a matrix from before levels: no lines


def test_a_run_of_some_areas_counts_only_what_it_selected() -> None:
    matrix = _matrix("e", 2)
    for rule in SPEC.by_area("metrics"):
        matrix["rules"][rule.id]["tests"] = 0  # a partial run: the area's rules were not asked about
    chosen = ["metrics", "appliance"]  # appliance has pending rules: they belong to the selection
    partial = selected(matrix, chosen, SPEC)
    assert partial["areas"] == ["appliance", "metrics"]
    pending = {r.id for area in chosen for r in SPEC.by_area(area) if r.status == "pending"}
    assert pending, "the fixture needs an area with pending rules"
    kept = {rule_id for rule_id, entry in matrix["rules"].items() if entry["tests"]} | pending
    assert set(partial["rules"]) == kept
    assert partial["checked_elsewhere"] == sorted(r.id for r in SPEC.by_area("metrics") if r.status == "checked")
    assert partial["levels"] == levels_summary(SPEC, partial["rules"])
    assert selected(matrix, [], SPEC) is matrix


def test_a_level_with_no_rule_in_the_run_says_so() -> None:
    documented = next(r for r in SPEC.active() if r.level == "documented" and r.status == "checked")
    rules = {documented.id: {"outcome": "passed", "tests": 1}}
    lines = level_lines({"engine": "e", "rules": rules, "levels": levels_summary(SPEC, rules)})
    assert lines[0].startswith("  documented (binding): 1 of 1 ")  # wording: the summary test
    assert lines[1] == "  public (binding): no public rule in this run"
    assert lines[2] == "  reference (informative): no reference rule in this run"
    assert "()" not in "".join(lines)


# --- the vendor's page ----------------------------------------------------------------------------

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
"""


@pytest.mark.parametrize("with_reference", [True, False], ids=["both matrices", "vendor only"])
def test_the_vendor_page_shows_both_jsons(tmp_path: Path, with_reference: bool) -> None:
    vendor, reference = _matrix("vendor", 1), _matrix("reference", 4)
    (tmp_path / MATRIX_FILE).write_text(json.dumps(vendor), encoding="utf-8")
    if with_reference:
        (tmp_path / REFERENCE_MATRIX_FILE).write_text(json.dumps(reference), encoding="utf-8")
    (tmp_path / "triage.yaml").write_text(TRIAGE, encoding="utf-8")
    write_cstorch_report(tmp_path, triage_path=tmp_path / "triage.yaml")
    page = (tmp_path / "conformance_cstorch.md").read_text(encoding="utf-8")
    found = tables(page)

    names = {"cerebras-pytorch 2.10.0": vendor, **({"reference engine": reference} if with_reference else {})}
    rows = found["Per level"]
    assert len(rows) == len(names) * len(LEVELS)
    for row in rows:
        matrix = names[row["implementation"]]
        level, role = row["level"].split(" ", 1)
        entry = matrix["levels"][level]
        assert role == ("(informative)" if level == "reference" else "(binding)")
        assert number(row["applicable"]) == entry["applicable"]
        assert number(row["passed"]) == entry["passed"] == entry["outcomes"].get("passed", 0)
        assert {o: number(row[o]) for o in OUTCOMES} == {o: entry["outcomes"].get(o, 0) for o in OUTCOMES}

    side = {row["rule"]: row for row in found["Every rule, side by side"]}
    assert set(side) == set(vendor["rules"])
    for rule_id, row in side.items():
        entry = vendor["rules"][rule_id]
        assert row["cerebras.pytorch"] == entry["outcome"]
        assert row["reference engine"] == (reference["rules"][rule_id]["outcome"] if with_reference else "")
        assert (row["level"], row["title"]) == (SPEC.get(rule_id).level, SPEC.get(rule_id).title)
        assert row["emulated"] == ", ".join(entry.get("emulated", ()))
        assert row["unsupported because"] == "; ".join(entry.get("unsupported_reasons", ()))
        assert row["triage"] == ("reference-choice" if rule_id == "GRADSCALER-024" else "")
    csv = pd.read_csv(tmp_path / "conformance_cstorch.csv", keep_default_na=False).set_index("rule")
    assert list(csv["cerebras.pytorch"]) == [vendor["rules"][r]["outcome"] for r in csv.index]
    levels_csv = pd.read_csv(tmp_path / "conformance_cstorch_levels.csv")
    assert list(levels_csv["applicable"]) == [number(row["applicable"]) for row in rows]
    summary = summary_line(vendor)
    assert f"{summary}. On the binding levels (documented, public) it does not conform" in page
    triage_rows = found["Triage: every disagreement, with its verdict and evidence"]
    assert triage_rows == [
        {
            "ids": "GRADSCALER-024",
            "verdict": "reference-choice",
            "finding": "it keeps going at the minimum scale",
            "evidence": "amp/grad_scaler.py:1",
            "resolution": "informative",
        }
    ]


def test_the_files_are_written_where_asked_in_their_stable_form(tmp_path: Path) -> None:
    """Nested output folders are made; the JSON is sorted and indented (stable diffs of committed
    reports); the CSVs hold the frames' columns only; the page opens with its title and what it shows."""
    matrix = _matrix("some.engine", 2)
    out = tmp_path / "a" / "b"
    written = write_conformance_report(out, matrix)
    assert written == [
        out / "conformance.json",
        out / "conformance.csv",
        out / "conformance_by_area.csv",
        out / "conformance.md",
    ]
    assert (out / "conformance.json").read_text(encoding="utf-8") == json.dumps(matrix, indent=2, sort_keys=True) + "\n"
    assert list(pd.read_csv(out / "conformance.csv").columns) == MATRIX_COLUMNS
    assert list(pd.read_csv(out / "conformance_by_area.csv").columns) == ["area", *OUTCOMES, "rules"]
    lines = (out / "conformance.md").read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["# Conformance matrix", ""]
    assert lines[4] == "A rule passes only when all of its tests pass; `pending` rules are not checkable yet."


def test_an_area_without_some_outcome_counts_zero_for_it() -> None:
    rules = {r.id: {"outcome": "pending" if r.status == "pending" else "passed", "tests": 1} for r in SPEC.active()}
    failing = next(r.id for r in SPEC.by_area("metrics") if r.status == "checked")
    rules[failing] = {"outcome": "failed", "tests": 1}
    areas = area_frame({"engine": "e", "rules": rules}, SPEC).set_index("area")
    metrics = [r for r in SPEC.by_area("metrics")]
    assert areas.loc["metrics", "failed"] == 1 and areas.loc["metrics", "passed"] == len(metrics) - 1
    assert areas.loc["precision", "failed"] == 0 and areas.loc["precision", "xfailed"] == 0
    assert areas["unsupported"].sum() == 0 and str(areas["unsupported"].dtype).startswith("int")


def test_a_page_says_which_implementation_csconform_and_spec_it_describes() -> None:
    from csconform.report.conformance import provenance

    matrix = {
        **_matrix("some.engine", 0),
        "implementation": {"name": "Some Engine 1.2"},
        "csconform": "9.9",
        "spec_sha256": "0123456789abcdef" + "f" * 48,
    }
    assert provenance(matrix) == (
        f"`some.engine` (Some Engine 1.2), judged by csconform 9.9 against the spec with sha256 0123456789abcdef "
        f"({matrix['spec_rules']} rules in force)"
    )
    older = {"engine": "old.engine", "rules": {}}
    assert provenance(older) == "`old.engine` (old.engine); no csconform version or spec recorded (an older matrix)"
    assert provenance({**older, "implementation": {"capabilities": []}}).startswith("`old.engine` (old.engine);")


def test_an_empty_matrix_still_has_its_columns() -> None:
    assert list(matrix_frame({"engine": "e", "rules": {}}, SPEC).columns) == MATRIX_COLUMNS


def _refusal_of(matrix: object, hint: str | None = None) -> str:
    with pytest.raises(InputFileError) as refused:
        check_matrix(matrix, "m.json") if hint is None else check_matrix(matrix, "m.json", hint)
    return str(refused.value)


def test_check_matrix_accepts_what_the_plugin_writes_and_names_what_is_wrong() -> None:
    """Every rule needs a known outcome (or inconclusive, from a differential run) and a whole number of tests;
    the refusal names the file, what it is not, the hint when one is given, and the entry at fault."""
    good = _matrix("e", 0)
    assert check_matrix(good, "m.json") is good
    inconclusive = {**good, "rules": {**good["rules"], "X-001": {"outcome": "inconclusive", "tests": 1}}}
    assert check_matrix(inconclusive, "m.json") is inconclusive
    where = "m.json: not a conformance matrix with per-level results"
    assert _refusal_of([]) == f"{where}: no 'rules' mapping"
    assert _refusal_of({}, "rerun: x") == f"{where} (rerun: x): no 'rules' mapping"
    outcomes = "passed, failed, xfailed, unsupported, skipped, pending"
    for entry in ("passed", {"outcome": "great", "tests": 1}, {"tests": 1}):
        broken = {**good, "rules": {"X-001": entry}}
        assert _refusal_of(broken) == f"{where}: rules.X-001: expected an outcome of {outcomes}"
    for tests in (True, "3", 1.0, None):
        broken = {**good, "rules": {"X-001": {"outcome": "passed", "tests": tests}}}
        assert _refusal_of(broken) == f"{where}: rules.X-001.tests: expected a number of tests"


def test_check_matrix_refuses_a_level_without_whole_counts_and_outcomes() -> None:
    """Each level needs whole-number applicable and passed counts (not booleans) and an outcomes mapping;
    a level that misses any one of the three is refused, naming the level."""
    good = _matrix("e", 0)
    level = LEVELS[0]
    counts = good["levels"][level]
    assert isinstance(counts["outcomes"], dict)
    broken_levels = (
        "all passed",
        [counts["applicable"], counts["passed"]],
        {**counts, "applicable": True},
        {**counts, "passed": False},
        {**counts, "applicable": "3"},
        {key: value for key, value in counts.items() if key != "passed"},
        {key: value for key, value in counts.items() if key != "outcomes"},
        {**counts, "outcomes": ["passed"]},
    )
    for entry in broken_levels:
        broken = {**good, "levels": {**good["levels"], level: entry}}
        assert _refusal_of(broken) == (
            f"m.json: not a conformance matrix with per-level results: levels.{level}: "
            "expected applicable, passed and outcomes"
        ), entry
