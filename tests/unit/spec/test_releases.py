"""Rules say which releases they hold for: the catalogue, the `releases` field, `spec list --release`."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_spec import VALID_AREA

from csconform.cli import main as cli_main
from csconform.errors import SpecError, UnknownNameError
from csconform.spec import check_spec, default_specs_dir, holds_for, load_catalogue, load_spec

CATALOGUE = """\
releases:
  - {name: 1.7.1, tag: R_1.7.1, commit: a, date: 2023-02-03, layout: flat}
  - {name: 1.9.1, tag: Release_1.9.1, commit: b, date: 2023-07-27, layout: flat}
  - {name: 2.10.0, tag: Release_2.10.0, commit: c, date: 2026-03-11, layout: trainer}
"""


@pytest.fixture
def releases_dir(spec_dir: Path) -> Path:
    (spec_dir / "releases.yaml").write_text(CATALOGUE, encoding="utf-8")
    return spec_dir


def with_releases(directory: Path, text: str) -> None:
    area = VALID_AREA.replace("    status: checked\n", f"    releases: {text!r}\n    status: checked\n", 1)
    (directory / "demo.yaml").write_text(area, encoding="utf-8")


def test_a_rule_holds_for_the_releases_its_range_selects(releases_dir: Path) -> None:
    with_releases(releases_dir, ">=1.8.0,<2.2.1")
    spec, catalogue = load_spec(releases_dir), load_catalogue(releases_dir)
    rule = spec.get("DEMO-001")
    assert rule.releases == ">=1.8.0,<2.2.1" and spec.get("DEMO-002").releases is None
    assert [r.name for r in catalogue.releases if holds_for(rule.releases, r)] == ["1.9.1"]
    assert all(holds_for(None, r) for r in catalogue.releases)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("since 1.8", "is not a version range"),
        (">=3.0", "selects no known release"),
        ("", "'releases' must be a version range"),
    ],
)
def test_a_bad_range_is_refused_naming_the_rule(releases_dir: Path, text: str, problem: str) -> None:
    with_releases(releases_dir, text)
    report = check_spec(releases_dir)
    assert report.spec is None and any("rule DEMO-001" in p and problem in p for p in report.problems)


def test_without_a_catalogue_no_rule_may_name_releases(spec_dir: Path) -> None:
    with_releases(spec_dir, ">=1.0")
    report = check_spec(spec_dir)
    assert any("releases.yaml is missing" in p for p in report.problems)


def test_the_catalogue_is_checked(spec_dir: Path) -> None:
    (spec_dir / "releases.yaml").write_text(CATALOGUE.replace("1.9.1, tag", "2.11.0, tag"), encoding="utf-8")
    with pytest.raises(SpecError, match="oldest first"):
        load_catalogue(spec_dir)
    (spec_dir / "releases.yaml").write_text(CATALOGUE.replace("layout: flat}", "layout: wide}", 1), encoding="utf-8")
    with pytest.raises(SpecError, match="layout 'wide' is not one of flat, trainer"):
        load_catalogue(spec_dir)


def test_a_release_is_named_in_full_or_by_its_prefix(releases_dir: Path) -> None:
    catalogue = load_catalogue(releases_dir)
    assert catalogue.get("1.9").name == "1.9.1" and catalogue.get("v2.10.0").name == "2.10.0"
    assert catalogue.newest.name == "2.10.0"
    with pytest.raises(UnknownNameError, match="known releases: 1.7.1, 1.9.1, 2.10.0"):
        catalogue.get("1.8")


def test_the_repository_catalogue_knows_every_model_zoo_release() -> None:
    catalogue = load_catalogue(default_specs_dir())
    assert catalogue.names[0] == "1.6.0" and catalogue.newest.name == "2.10.0" and len(catalogue.names) == 23
    assert {r.layout for r in catalogue.releases if r.version.major == 1} == {"flat"}
    spec = load_spec()
    assert spec.get("GRAPH-005").releases == "<1.8.0" and spec.get("PRECISION-001").releases == "<2.3.0"


def test_spec_list_shows_the_rules_in_force_in_a_release(
    releases_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with_releases(releases_dir, "<1.8.0")
    assert cli_main(["spec", "--specs-dir", str(releases_dir), "list", "--release", "1.7"]) == 0
    assert "DEMO-001" in capsys.readouterr().out
    assert cli_main(["spec", "--specs-dir", str(releases_dir), "list", "--release", "2.10"]) == 0
    assert "DEMO-001" not in capsys.readouterr().out
    assert cli_main(["spec", "--specs-dir", str(releases_dir), "show", "DEMO-001"]) == 0
    assert "releases   <1.8.0" in capsys.readouterr().out
