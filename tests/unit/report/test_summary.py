"""The report's first screen (csconform/report/summary.py): every number and link against the JSON."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from csconform.report.conformance import write_conformance_report
from csconform.report.site import write_index
from csconform.report.summary import summary_html, summary_markdown
from csconform.spec import LEVELS, load_spec
from csconform.spec.verdict import levels_summary

SPEC = load_spec()
OUTCOMES = ("passed", "failed", "xfailed", "unsupported", "skipped")


def _matrix(engine: str, shift: int) -> dict:
    rules = {}
    for index, rule in enumerate(SPEC.active()):
        outcome = "pending" if rule.status == "pending" else OUTCOMES[(index * 3 + shift) % len(OUTCOMES)]
        rules[rule.id] = {"outcome": outcome, "tests": 1}
    return {"engine": engine, "spec_rules": len(rules), "rules": rules, "levels": levels_summary(SPEC, rules)}


class _Cells(HTMLParser):
    """The summary table's rows: area -> the cells' text and the links in them."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, list[str]]]] = {}
        self._row: list[tuple[str, list[str]]] | None = None
        self._area = ""
        self._in: str | None = None
        self._text: list[str] = []
        self._links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self._row, self._area = [], ""
        elif tag in ("th", "td"):
            self._in, self._text, self._links = tag, [], []
        elif tag == "a" and self._in:
            self._links.append(dict(attrs)["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._row is not None and not self._row and self._in == "th":
            self._area = "".join(self._text).strip()
        elif tag == "td" and self._row is not None:
            self._row.append(("".join(self._text), self._links))
        elif tag == "tr" and self._row:
            self.rows[self._area] = self._row
        if tag in ("th", "td"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)


def _write(folder: Path, name: str, data: dict) -> None:
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


def test_each_cell_counts_its_area_and_level_and_links_every_rule_that_does_not_pass(tmp_path: Path) -> None:
    ours, theirs = _matrix("csconform.engine", 0), _matrix("csconform.adapters.cstorch", 2)
    _write(tmp_path, "conformance.json", ours)
    _write(tmp_path, "conformance_cstorch.json", theirs)
    differential = {
        "areas": [
            {"area": "grad_scaler", "compared": True, "classes": 3, "triaged": 2, "untriaged": 1},
            {"area": "checkpoint", "compared": True, "classes": 0},
            {"area": "data", "compared": False, "classes": 0},
        ],
        "classes": [],
        "summary": {},
    }
    _write(tmp_path, "differential_cstorch.json", differential)
    parser = _Cells()
    parser.feed(summary_html(tmp_path, SPEC))
    areas = [area.name for area in SPEC.areas]
    assert list(parser.rows) == [*areas, "checkpoint", "data"]  # areas only the differential run names
    for area in areas:
        cells = parser.rows[area]
        assert len(cells) == 2 * len(LEVELS) + 1
        for offset, (matrix, page) in enumerate(((ours, "conformance"), (theirs, "conformance_cstorch"))):
            for index, level in enumerate(LEVELS):
                text, links = cells[offset * len(LEVELS) + index]
                mine = {
                    r.id: matrix["rules"][r.id]["outcome"] for r in SPEC.active() if (r.area, r.level) == (area, level)
                }
                if not mine:
                    assert text.strip() == "" and links == []
                    continue
                applicable = sum(o in ("passed", "failed", "xfailed") for o in mine.values())
                passed = sum(o == "passed" for o in mine.values())
                assert text.startswith(f"{passed}/{applicable}"), (area, level, text)
                not_passing = sorted(r for r, o in mine.items() if o not in ("passed", "pending"))
                assert sorted(links) == [f"#{page}-{r}" for r in not_passing], (area, level)
                pending = sum(o == "pending" for o in mine.values())
                assert (f"{pending} pending" in text) == bool(pending)
    assert parser.rows["grad_scaler"][-1] == ("3 found: 1 untriaged, 2 triaged", ["#differential_cstorch"])
    assert parser.rows["data"][-1][0] == "not compared" and parser.rows["precision"][-1][0] == ""
    assert parser.rows["checkpoint"][-1][0] == "0 found"


def test_what_has_not_run_says_how_to_produce_it(tmp_path: Path) -> None:
    _write(tmp_path, "conformance.json", _matrix("csconform.engine", 1))
    page = summary_html(tmp_path, SPEC)
    assert "not run yet: <code>tox -e cstorch</code> writes conformance_cstorch.json" in page
    assert "not run yet: <code>csconform diff --against csconform.adapters.cstorch</code>" in page
    markdown = "\n".join(summary_markdown(tmp_path, SPEC))
    assert "**cerebras.pytorch**: not run yet: `tox -e cstorch` writes conformance_cstorch.json" in markdown
    assert "**reference engine**: does not conform (applicable rules passing: documented " in markdown


def test_the_index_opens_on_the_summary_and_its_links_land_on_rule_rows(tmp_path: Path) -> None:
    matrix = _matrix("csconform.engine", 3)
    write_conformance_report(tmp_path, matrix)
    _, index_html = write_index(tmp_path)
    page = index_html.read_text(encoding="utf-8")
    assert page.index("<section id='summary'>") < page.index("<nav>") < page.index("<h2 id='conformance'>")
    targets = set(re.findall(r"href='#(conformance-[^']+)'", page))
    ids = set(re.findall(r"<tr id='([^']+)'>", page))
    assert targets and targets <= ids
    assert ids == {f"conformance-{rule_id}" for rule_id in matrix["rules"]}
