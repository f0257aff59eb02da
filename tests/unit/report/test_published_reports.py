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

import pandas as pd
import pytest
from markdown_tables import assert_table_shows, number, tables

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


def _csv(name: str) -> pd.DataFrame:
    return pd.read_csv(REPORTS / name)


def test_each_performance_page_shows_the_csv_tables_beside_it():
    """The committed performance pages show the numbers of the CSVs written with them (all of a table,
    or the cut the heading names)."""
    page = tables((REPORTS / "performance.md").read_text(encoding="utf-8"))
    throughput, scaling = _csv("performance_throughput.csv"), _csv("performance_scaling.csv")
    assert_table_shows(page["Throughput on one system"], throughput[throughput["systems"] == 1].drop(columns="systems"))
    assert_table_shows(page["Scaling of weight streaming on CS-2 clusters"], scaling[scaling["systems"] == 192])
    assert_table_shows(
        page["Per-kernel breakdown (BERT-large, pipelined, WSE-2)"], _csv("performance_kernels.csv")[:12]
    )
    layers = _csv("performance_streaming_layers.csv")[:6]
    assert_table_shows(page["Weight streaming, per layer (GPT-3 XL, 16 CS-2)"], layers)
    assert_table_shows(page["The model's figures against published ones"], _csv("performance_published.csv"))
    validation = tables((REPORTS / "performance_validation.md").read_text(encoding="utf-8"))
    parameters = _csv("performance_validation_parameters.csv")
    assert_table_shows(validation["What makes real runs slower than the peak: the fitted figures"], parameters)
    assert_table_shows(validation["Which execution mode the runs used"], _csv("performance_validation_modes.csv"))
    assert_table_shows(validation["Every run"], _csv("performance_validation.csv"))
    assert_table_shows(validation["Grouped cross-validation and the band"], _csv("performance_validation_groups.csv"))
    assert_table_shows(
        validation["Grouped cross-validation and the band (2)"], _csv("performance_validation_bands.csv")
    )
    assert_table_shows(
        validation["Grouped cross-validation and the band (3)"], _csv("performance_validation_judged.csv")
    )
    assert_table_shows(
        validation["Grouped cross-validation and the band (4)"], _csv("performance_validation_releases.csv")
    )
    scaling = _csv("performance_validation_scaling.csv")
    shown = scaling[scaling["systems"].isin([1, 2, 16, 192, 2048])]
    assert_table_shows(validation["Clusters and wafer generations"], shown)
    generations = _csv("performance_validation_generations.csv")
    assert_table_shows(validation["Clusters and wafer generations (2)"], generations)
    assert_table_shows(validation["Against public statements"], _csv("performance_validation_public.csv"))


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
