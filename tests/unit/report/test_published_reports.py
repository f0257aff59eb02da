"""What is published in reports/ is current: it describes this spec and this version, and every link to it
resolves.

The committed matrices record the csconform version, the spec's sha256 and the implementation's version;
the pages built from them say so and show the numbers of their JSON; index.md says which csconform and
spec made it. When the spec or the version changes, these tests fail until `csconform report` (and
`tox -e cstorch` for the vendor's matrix) regenerate the folder.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from markdown_tables import number, tables

from csconform import __version__
from csconform.report.conformance import OUTCOMES, STAMP_DIGITS, summary_line
from csconform.spec import load_spec, spec_digest

PROJECT = Path(__file__).resolve().parents[3]
REPORTS = PROJECT / "reports"
REGENERATE = "regenerate with `csconform report` (and `tox -e cstorch` for the vendor's matrix)"
# a markdown link or image whose target is a relative path: [text](path) or ![alt](path)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _matrix(name: str) -> dict:
    return json.loads((REPORTS / name).read_text(encoding="utf-8"))


def _vendor_version() -> str:
    """The cerebras-pytorch release the project pins (the cstorch extra of pyproject.toml)."""
    extras = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    (requirement,) = extras["cstorch"]
    return requirement.split("==")[1]


@pytest.mark.parametrize(
    ("name", "implementation"),
    [
        ("conformance.json", f"csconform reference engine {__version__}"),
        ("conformance_cstorch.json", f"cerebras.pytorch {_vendor_version()}"),
    ],
)
def test_the_published_matrices_describe_this_spec_this_version_and_this_release(name: str, implementation: str):
    matrix = _matrix(name)
    assert matrix.get("spec_sha256") == spec_digest(), f"reports/{name} describes another spec: {REGENERATE}"
    assert matrix.get("csconform") == __version__, f"reports/{name} was judged by another csconform: {REGENERATE}"
    assert matrix["implementation"].get("name") == implementation, f"reports/{name}: {REGENERATE}"
    spec = load_spec()
    assert matrix["spec_rules"] == len(spec.active()) and set(matrix["rules"]) == {r.id for r in spec.active()}


@pytest.mark.parametrize("page", ["conformance", "conformance_cstorch"])
def test_each_conformance_page_shows_the_json_it_was_built_from(page: str):
    matrix = _matrix(f"{page}.json")
    text = (REPORTS / f"{page}.md").read_text(encoding="utf-8")
    assert f"sha256 {matrix['spec_sha256'][:STAMP_DIGITS]}" in text and f"csconform {matrix['csconform']}" in text
    assert matrix["implementation"]["name"] in text
    assert summary_line(matrix) in text
    found = tables(text)
    rows = found["By rule"] if page == "conformance" else found["Every rule, side by side"]
    outcome_column = "outcome" if page == "conformance" else "cerebras.pytorch"
    assert {row["rule"]: row[outcome_column] for row in rows} == {r: e["outcome"] for r, e in matrix["rules"].items()}
    if page == "conformance":
        spec = load_spec()
        for row in found["By area"]:
            counts = Counter(e["outcome"] for r, e in matrix["rules"].items() if spec.get(r).area == row["area"])
            assert {o: number(row[o]) for o in OUTCOMES} == {o: counts[o] for o in OUTCOMES}, row["area"]
    else:
        for row in found["Per level"]:
            level = row["level"].split(" ")[0]
            source = matrix if row["implementation"].startswith("cerebras-pytorch") else _matrix("conformance.json")
            assert number(row["applicable"]) == source["levels"][level]["applicable"], row


def test_the_index_says_which_csconform_and_spec_made_it():
    for index in ("index.md", "index.html"):
        text = (REPORTS / index).read_text(encoding="utf-8")
        assert f"csconform {__version__} from the spec with sha256 {spec_digest()}" in text, (
            f"reports/{index} was made from another spec or version: {REGENERATE}"
        )


def _links(markdown: Path) -> list[str]:
    return [target for target in LINK.findall(markdown.read_text(encoding="utf-8")) if "://" not in target]


def test_every_readme_link_into_reports_points_at_a_file():
    links = [target for target in _links(PROJECT / "README.md") if target.startswith("reports/")]
    assert links, "the README links no report"
    missing = [target for target in links if not (PROJECT / target).is_file()]
    assert missing == [], f"README.md links files reports/ does not have: {missing} ({REGENERATE})"


def test_every_link_between_report_pages_points_at_a_file():
    missing = [
        f"{page.name} -> {target}"
        for page in sorted(REPORTS.glob("*.md"))
        for target in _links(page)
        if not (page.parent / target).is_file()
    ]
    assert missing == []
