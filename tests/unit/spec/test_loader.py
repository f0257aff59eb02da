"""The spec loader refuses every malformed spec with a message naming the file and the rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from demo_spec import VALID_AREA

from csconform.errors import SpecError
from csconform.spec import check_spec, load_spec


def test_valid_spec_loads_and_answers_queries(spec_dir: Path) -> None:
    spec = load_spec(spec_dir)
    assert len(spec) == 2
    rule = spec.get("DEMO-001")
    assert rule.area == "demo" and rule.kind == "limitation" and rule.scope.target == "cs"
    assert rule.error is not None and rule.error.type == "PrecisionError" and rule.error.message is None
    assert [r.id for r in spec.by_status("pending")] == ["DEMO-002"]
    assert [r.id for r in spec.by_area("demo")] == ["DEMO-001", "DEMO-002"]
    assert [r.id for r in spec.by_source("public-facts")] == ["DEMO-002"]
    assert [r.id for r in spec.by_source("pytorch", "Floating Point Precision")] == ["DEMO-001"]
    assert spec.counts() == {"checked": 1, "pending": 1, "retired": 0}
    assert rule.level == "documented" and spec.get("DEMO-002").level == "public"
    assert [r.id for r in spec.by_level("public")] == ["DEMO-002"] and spec.by_level("reference") == []
    assert spec.level_counts() == {"documented": 1, "public": 1, "reference": 0}
    with pytest.raises(SpecError, match="unknown level 'binding'; known levels: documented, public, reference"):
        spec.by_level("binding")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("    kind: limitation\n", "    kind: limitation\n    colour: red\n", "rule DEMO-001: unknown key 'colour'"),
        ("id: DEMO-002", "id: DEMO-001", "rule DEMO-001: duplicate id"),
        ("id: DEMO-002", "id: demo-2", "rule demo-2: bad id 'demo-2'"),
        (
            '    source: "pytorch-limitations#Floating Point Precision"\n',
            "",
            "rule DEMO-001: missing required key 'source'",
        ),
        (
            "pytorch-limitations#Floating Point Precision",
            "no-such-document#Floating Point Precision",
            "names no known document",
        ),
        ("#Floating Point Precision", "#Fixed Point", "has no section 'Fixed Point'"),
        ("#Floating Point Precision", "", "must name a section"),
        ("    reason: not yet checkable\n", "", "rule DEMO-002: a pending rule needs a 'reason'"),
        ("status: checked", "status: done", "status 'done' is not one of"),
        ("kind: limitation", "kind: wish", "kind 'wish' is not one of"),
        (
            "    level: documented\n",
            "",
            "rule DEMO-001: missing required key 'level' (how binding the rule is: documented, public, reference)",
        ),
        ("level: documented", "level: binding", "rule DEMO-001: level 'binding' is not one of documented, public"),
        ("level: documented", "level: [public]", "rule DEMO-001: level ['public'] is not one of"),
        (
            '"pytorch-limitations#Floating Point Precision"',
            '"public-facts#Number formats"',
            "rule DEMO-001: a documented rule must cite a seed document; public-facts alone makes it public",
        ),
        ("target: cs,", "target: gpu,", "scope target 'gpu'"),
        ("{type: PrecisionError}", "{type: NoSuchError}", "error type 'NoSuchError'"),
        ("area: demo", "area: other", "'area' must equal the file name stem"),
        ("title: A demonstration area\n", "title: A demonstration area\nowner: me\n", "unknown top-level key 'owner'"),
        ("id: DEMO-002", "id: OTHER-002", "share one prefix"),
    ],
)
def test_malformed_rule_is_named(spec_dir: Path, old: str, new: str, expected: str) -> None:
    text = VALID_AREA.replace(old, new, 1)
    assert text != VALID_AREA
    (spec_dir / "demo.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as raised:
        load_spec(spec_dir)
    assert expected in str(raised.value)
    assert "demo.yaml" in str(raised.value)


def test_duplicate_id_across_files_names_both(spec_dir: Path) -> None:
    (spec_dir / "other.yaml").write_text(VALID_AREA.replace("area: demo", "area: other"), encoding="utf-8")
    report = check_spec(spec_dir)
    assert report.spec is None
    assert any("duplicate id (also in demo.yaml)" in p and "other.yaml" in p for p in report.problems)


def test_yaml_syntax_error_names_file_and_line(spec_dir: Path) -> None:
    (spec_dir / "demo.yaml").write_text(VALID_AREA.replace("title: Mixed", "title: [Mixed"), encoding="utf-8")
    with pytest.raises(SpecError, match=r"demo.yaml: line \d+: invalid YAML"):
        load_spec(spec_dir)


def test_every_problem_is_collected(spec_dir: Path) -> None:
    text = VALID_AREA.replace("kind: limitation", "kind: wish").replace("status: pending", "status: later")
    (spec_dir / "demo.yaml").write_text(text, encoding="utf-8")
    problems = check_spec(spec_dir).problems
    assert len(problems) >= 2
    assert any("DEMO-001" in p for p in problems) and any("DEMO-002" in p for p in problems)


def test_missing_directory_and_empty_directory(tmp_path: Path) -> None:
    assert "spec directory not found" in check_spec(tmp_path / "nowhere").problems[0]
    with pytest.raises(SpecError, match="sources.yaml: file not found"):
        load_spec(tmp_path)


def test_binary_file_is_a_clear_error(spec_dir: Path) -> None:
    (spec_dir / "demo.yaml").write_bytes(b"\xff\xfe\x00rules")
    with pytest.raises(SpecError, match="demo.yaml: not UTF-8"):
        load_spec(spec_dir)
