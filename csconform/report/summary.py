"""The report's first screen: per implementation and area, the rules by level and outcome.

For each implementation with a matrix in the report folder (the reference engine's
``conformance.json``, the vendor's ``conformance_cstorch.json``), one verdict line and, per area and
level, how many applicable rules pass, with every rule that does not pass named and linked to its row
in that implementation's table; beside them the differential classes per area found by
``csconform diff`` against that implementation (``differential_<name>.json``), or how to produce them.
An implementation whose matrix is missing is shown as not run yet, with the command that produces it.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.report.conformance import provenance
from csconform.spec import LEVELS, Spec, load_spec
from csconform.spec.verdict import BINDING_LEVELS, conforms

# the verdicts of a differential class (csconform diff's report)
DIFFERENTIAL_VERDICTS = ("untriaged", "regression", "stale", "triaged", "fixed")


@dataclass(frozen=True)
class Implementation:
    title: str
    matrix_file: str  # in the report folder; its page (the stem) holds the table the rules link to
    produced_by: str
    differential: str | None = None  # differential_<name>.json, for an implementation compared with ours
    differential_by: str = ""


IMPLEMENTATIONS = (
    Implementation("reference engine", "conformance.json", "csconform report"),
    Implementation(
        "cerebras.pytorch",
        "conformance_cstorch.json",
        "tox -e cstorch",
        "differential_cstorch.json",
        "csconform diff --against csconform.adapters.cstorch",
    ),
)


def rule_anchor(page: str, rule_id: str) -> str:
    """The id of a rule's row in a page's table (site.py gives every row of a rule table one)."""
    return f"{page}-{rule_id}"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass
class Column:
    """One implementation's part of the summary."""

    implementation: Implementation
    matrix: dict[str, Any] | None
    differential: dict[str, Any] | None

    @property
    def page(self) -> str:
        return Path(self.implementation.matrix_file).stem

    def verdict(self) -> str:
        if self.matrix is None:
            return f"not run yet: `{self.implementation.produced_by}` writes {self.implementation.matrix_file}"
        levels = self.matrix.get("levels")
        if not levels:
            return f"{provenance(self.matrix)}: a matrix without levels; rerun `{self.implementation.produced_by}`"
        parts = [f"{level} {levels[level]['passed']}/{levels[level]['applicable']}" for level in LEVELS]
        verdict = "conforms" if conforms(levels) else "does not conform"
        return f"{verdict} (applicable rules passing: {', '.join(parts)}); {provenance(self.matrix)}"

    def cells(self, spec: Spec) -> dict[tuple[str, str], dict[str, list[str]]]:
        """(area, level) -> outcome -> rule ids."""
        cells: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for rule_id, entry in sorted((self.matrix or {}).get("rules", {}).items()):
            rule = spec.get(rule_id) if rule_id in spec else None
            key = (rule.area, rule.level) if rule else ("(not in this spec)", "reference")
            cells[key][str(entry["outcome"])].append(rule_id)
        return cells

    def classes_by_area(self) -> dict[str, str] | None:
        """Area -> its differential classes in words, from the report ``csconform diff`` writes (its
        ``areas``: per area the classes found and the count of each verdict); None when there is none."""
        areas = (self.differential or {}).get("areas")
        if not isinstance(areas, list):
            return None
        by_area = {}
        for entry in areas:
            if not isinstance(entry, dict) or "area" not in entry:
                continue
            verdicts = [f"{entry[v]} {v}" for v in DIFFERENTIAL_VERDICTS if entry.get(v)]
            if not entry.get("compared", True):
                by_area[str(entry["area"])] = "not compared"
            else:
                found = f"{entry.get('classes', 0)} found" + (f": {', '.join(verdicts)}" if verdicts else "")
                by_area[str(entry["area"])] = found
        return by_area


def columns(out_dir: Path) -> list[Column]:
    return [
        Column(
            implementation,
            _read(out_dir / implementation.matrix_file),
            _read(out_dir / implementation.differential) if implementation.differential else None,
        )
        for implementation in IMPLEMENTATIONS
    ]


# --- HTML --------------------------------------------------------------------------------------------


def _links(page: str, rule_ids: list[str], outcome: str) -> str:
    return " ".join(f"<a class='{outcome}' href='#{rule_anchor(page, r)}'>{html.escape(r)}</a>" for r in rule_ids)


def _cell_html(page: str, outcomes: dict[str, list[str]]) -> str:
    if not outcomes:
        return "<td class='none'></td>"
    applicable = sum(len(outcomes.get(o, ())) for o in ("passed", "failed", "xfailed"))
    parts = [f"<b>{len(outcomes.get('passed', ()))}/{applicable}</b>"]
    for outcome in ("failed", "xfailed"):
        if outcomes.get(outcome):
            parts.append(f"{outcome} {_links(page, outcomes[outcome], outcome)}")
    for outcome in ("unsupported", "skipped"):
        if outcomes.get(outcome):
            parts.append(
                f"<details><summary>{len(outcomes[outcome])} {outcome}</summary>"
                f"{_links(page, outcomes[outcome], outcome)}</details>"
            )
    if outcomes.get("pending"):
        parts.append(f"{len(outcomes['pending'])} pending")
    return "<td>" + " ".join(parts) + "</td>"


def _differential_html(column: Column, area: str) -> str:
    by_area = column.classes_by_area()
    if by_area is None:
        return "<td class='none'>not run yet</td>"
    if area not in by_area:
        return "<td class='none'></td>"
    target = Path(column.implementation.differential or "").stem  # the differential page's section
    return f"<td><a href='#{target}'>{html.escape(by_area[area])}</a></td>"


def summary_html(out_dir: Path, spec: Spec | None = None) -> str:
    """The summary section of index.html (``<section id='summary'>``)."""
    spec = spec or load_spec()
    cols = columns(out_dir)
    areas = [area.name for area in spec.areas]
    for column in cols:  # an area the differential run compares that the spec names otherwise
        areas += sorted(set(column.classes_by_area() or {}) - set(areas))
    head = ["<tr><th rowspan='2'>area</th>"]
    sub = ["<tr>"]
    for column in cols:
        span = len(LEVELS) + (1 if column.implementation.differential else 0)
        head.append(f"<th colspan='{span}'>{html.escape(column.implementation.title)}</th>")
        sub += [f"<th>{level}{'' if level in BINDING_LEVELS else ' (informative)'}</th>" for level in LEVELS]
        if column.implementation.differential:
            sub.append("<th>differential classes</th>")
    rows = ["".join(head) + "</tr>", "".join(sub) + "</tr>"]
    cells = [column.cells(spec) for column in cols]
    for area in areas:
        row = [f"<tr><th>{html.escape(area)}</th>"]
        for column, by_key in zip(cols, cells, strict=True):
            row += [_cell_html(column.page, by_key.get((area, level), {})) for level in LEVELS]
            if column.implementation.differential:
                row.append(_differential_html(column, area))
        rows.append("".join(row) + "</tr>")
    verdicts = "".join(f"<li><b>{html.escape(c.implementation.title)}</b>: {_code(c.verdict())}</li>" for c in cols)
    notes = [
        f"<li>Differential classes against {html.escape(c.implementation.title)}: not run yet: "
        f"<code>{html.escape(c.implementation.differential_by)}</code> writes {c.implementation.differential}.</li>"
        for c in cols
        if c.implementation.differential and c.classes_by_area() is None
    ]
    legend = (
        "<p class='note'>A cell reads passed/applicable rules of that area and level (applicable: passed, failed "
        "or xfailed); every rule that does not pass is named and linked to its row. An implementation conforms "
        "when every applicable documented and public rule passes; reference rules inform.</p>"
    )
    return (
        "<section id='summary'><h2>Summary</h2>"
        f"<ul class='verdicts'>{verdicts}{''.join(notes)}</ul>"
        f"<div class='scroll'><table class='summary'>{''.join(rows)}</table></div>{legend}</section>"
    )


def _code(text: str) -> str:
    """Markdown-style `code` spans as HTML."""
    pieces = html.escape(text).split("`")
    return "".join(f"<code>{piece}</code>" if index % 2 else piece for index, piece in enumerate(pieces))


# --- markdown ----------------------------------------------------------------------------------------


def summary_markdown(out_dir: Path, spec: Spec | None = None) -> list[str]:
    """The summary for index.md: the verdicts and, per implementation, passed/applicable by area and level."""
    spec = spec or load_spec()
    lines = ["## Summary", ""]
    for column in columns(out_dir):
        lines.append(f"- **{column.implementation.title}**: {column.verdict()}")
        if column.implementation.differential and column.classes_by_area() is None:
            lines.append(
                f"- differential classes against {column.implementation.title}: not run yet: "
                f"`{column.implementation.differential_by}` writes {column.implementation.differential}"
            )
    for column in columns(out_dir):
        if column.matrix is None:
            continue
        cells = column.cells(spec)
        lines += ["", f"{column.implementation.title} ([{column.page}.md]({column.page}.md)):", ""]
        lines.append("| area | " + " | ".join(LEVELS) + " | not passing |")
        lines.append("|---" * (len(LEVELS) + 2) + "|")
        for area in (a.name for a in spec.areas):
            row = []
            for level in LEVELS:
                outcomes = cells.get((area, level), {})
                applicable = sum(len(outcomes.get(o, ())) for o in ("passed", "failed", "xfailed"))
                row.append(f"{len(outcomes.get('passed', ()))}/{applicable}" if outcomes else "")
            failing = [
                f"{r} ({o})"
                for level in LEVELS
                for o in ("failed", "xfailed")
                for r in cells.get((area, level), {}).get(o, [])
            ]
            lines.append(f"| {area} | " + " | ".join(row) + f" | {', '.join(failing)} |")
    return [*lines, ""]
