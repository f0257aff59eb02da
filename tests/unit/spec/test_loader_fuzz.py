"""Fuzz the loader: whatever the document, the answer is a spec or a SpecError, never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from demo_spec import VALID_AREA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from csconform.errors import SpecError
from csconform.spec import LEVELS, check_spec, default_specs_dir, load_spec
from csconform.spec.loader import SpecReport

SOURCES = (default_specs_dir() / "sources.yaml").read_text(encoding="utf-8")

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10) | st.integers(), inner, max_size=4)
    ),
    max_leaves=20,
)
rule_fields = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["DEMO-001", "DEMO-1", "demo-001", ""]) | scalars,
        "title": scalars,
        "statement": scalars,
        "source": st.sampled_from(["pytorch-limitations#Static Graphs", "x#y", "public-facts#Hardware"]) | documents,
        "kind": st.sampled_from(["limitation", "behaviour", "nonsense"]) | scalars,
        "level": st.sampled_from([*LEVELS, "normative"]) | scalars,
        "scope": documents | st.just({"target": "cs", "mode": "any"}),
        "status": st.sampled_from(["checked", "pending", "retired"]) | scalars,
        "error": documents | st.just({"type": "ValueError", "message": "m"}),
        "reason": scalars,
    },
)


SEED_SOURCE = "pytorch-limitations#Static Graphs"
PUBLIC_FACTS_SOURCE = "public-facts#Hardware"
well_formed_rules = st.lists(
    st.fixed_dictionaries(
        {
            "title": st.just("t"),
            "statement": st.just("s"),
            "source": st.sampled_from([[SEED_SOURCE], [PUBLIC_FACTS_SOURCE], [SEED_SOURCE, PUBLIC_FACTS_SOURCE]]),
            "kind": st.sampled_from(["limitation", "behaviour", "hardware"]),
            "level": st.sampled_from(LEVELS),
            "scope": st.just({"target": "both", "mode": "any"}),
            "status": st.just("checked"),
        }
    ),
    min_size=1,
    max_size=5,
)


def _load_text(text: str) -> SpecReport:
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        (directory / "sources.yaml").write_text(SOURCES, encoding="utf-8")
        (directory / "demo.yaml").write_text(text, encoding="utf-8")
        try:
            load_spec(directory)
        except SpecError as exc:
            assert "demo.yaml" in str(exc)
        report = check_spec(directory)
        assert (report.spec is None) == bool(report.problems)
        return report


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    _load_text(text)


@given(documents)
def test_any_yaml_structure(document: object) -> None:
    _load_text(yaml.safe_dump(document))


@given(st.lists(rule_fields, min_size=1, max_size=3), st.sampled_from(["demo", "other", None]))
def test_rules_with_arbitrary_fields(rules: list[dict], area: str | None) -> None:
    _load_text(yaml.safe_dump({"area": area, "title": "t", "rules": rules}))


@given(well_formed_rules)
def test_levels_load_unless_a_documented_rule_cites_public_facts_alone(rules: list[dict]) -> None:
    for number, rule in enumerate(rules, start=1):
        rule["id"] = f"DEMO-{number:03d}"
    report = _load_text(yaml.safe_dump({"area": "demo", "title": "t", "rules": rules}))
    public_facts_only = [r["id"] for r in rules if r["level"] == "documented" and r["source"] == [PUBLIC_FACTS_SOURCE]]
    if public_facts_only:
        assert len(report.problems) == len(public_facts_only)
        assert all("a documented rule must cite a seed document" in problem for problem in report.problems)
    else:
        assert report.spec is not None
        assert [rule.level for rule in report.spec] == [r["level"] for r in rules]
        assert sum(report.spec.level_counts().values()) == len(rules)


@given(st.data())
def test_mutated_valid_document(data: st.DataObject) -> None:
    lines = VALID_AREA.splitlines(keepends=True)
    operation = data.draw(st.sampled_from(["delete", "truncate", "insert", "duplicate"]))
    index = data.draw(st.integers(0, len(lines) - 1))
    if operation == "delete":
        del lines[index]
    elif operation == "truncate":
        lines[index] = lines[index][: data.draw(st.integers(0, len(lines[index])))]
    elif operation == "insert":
        lines.insert(
            index,
            data.draw(
                st.sampled_from(["  - [\n", "&a\n", "*b\n", ": :\n", "\t- x\n", "!!python/object:os.system x\n"])
            ),
        )
    else:
        lines.insert(index, lines[index])
    _load_text("".join(lines))
