"""The registry of source documents (specs/sources.yaml): what it refuses, and what ``seed`` decides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from csconform.errors import SpecError
from csconform.spec import check_spec, load_registry


def _registry_data(spec_dir: Path) -> dict:
    return yaml.safe_load((spec_dir / "sources.yaml").read_text(encoding="utf-8"))


def _write(spec_dir: Path, data: dict) -> None:
    (spec_dir / "sources.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_the_registry_knows_documents_by_id_and_marks_the_seeds(spec_dir: Path) -> None:
    registry = load_registry(spec_dir)
    assert registry.document("pytorch-limitations").seed
    assert not registry.document("public-facts").seed
    assert registry.document("cerebras-modelzoo").path == "specs/vendor/cerebras-modelzoo.md"
    assert registry.document("sources.yaml") is None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.update(file="notes.md"), "unknown key 'file'"),
        (lambda d: d.update(id="Public Facts"), "id 'Public Facts'"),
        (lambda d: d.update(id="facts.md#x"), "id 'facts.md#x'"),
        (lambda d: d.update(seed="yes"), "'seed' must be true or false"),
        (lambda d: d.pop("id"), "expected a mapping with 'id'"),
    ],
)
def test_a_malformed_document_entry_is_refused_naming_it(spec_dir: Path, change, named: str) -> None:
    data = _registry_data(spec_dir)
    change(data["documents"][5])
    _write(spec_dir, data)
    with pytest.raises(SpecError) as raised:
        load_registry(spec_dir)
    assert named in str(raised.value) and "documents[5]" in str(raised.value)


def test_an_id_registered_twice_is_refused(spec_dir: Path) -> None:
    data = _registry_data(spec_dir)
    data["documents"][1]["id"] = data["documents"][0]["id"]
    _write(spec_dir, data)
    with pytest.raises(SpecError, match="id 'pytorch-limitations' is registered twice"):
        load_registry(spec_dir)


def test_the_seed_flag_not_the_name_decides_what_a_documented_rule_may_cite(spec_dir: Path) -> None:
    demo = spec_dir / "demo.yaml"
    demo.write_text(
        demo.read_text(encoding="utf-8").replace(
            '"pytorch-limitations#Floating Point Precision"', '"public-facts#Number formats"'
        ),
        encoding="utf-8",
    )
    assert any("must cite a seed document" in p for p in check_spec(spec_dir).problems)
    data = _registry_data(spec_dir)
    facts = next(d for d in data["documents"] if d["id"] == "public-facts")
    facts["seed"] = True
    _write(spec_dir, data)
    assert check_spec(spec_dir).problems == []
