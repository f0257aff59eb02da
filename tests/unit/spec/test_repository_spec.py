"""The repository's own spec: it loads, every documented section has a rule, and the headings exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from csconform.spec import default_specs_dir, load_registry, load_spec, uncovered_sections
from csconform.spec.sources import missing_headings

REPOSITORY = Path(__file__).resolve().parents[3]
SHARED = REPOSITORY.parent / "shared"


def test_repository_spec_loads() -> None:
    spec = load_spec()
    assert len(spec) > 0


def test_every_registered_section_has_a_rule() -> None:
    registry = load_registry(default_specs_dir())
    assert uncovered_sections(load_spec(), registry) == []


def test_pending_rules_say_why() -> None:
    for rule in load_spec().by_status("pending"):
        assert rule.reason, rule.id


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the source documents) is not beside the repository")
def test_registered_sections_are_headings_of_their_documents() -> None:
    registry = load_registry(default_specs_dir())
    for document in registry.documents:
        if document.path is not None:
            location = REPOSITORY / document.path
        else:
            location = SHARED / ("design" if document.file == "FACTS.md" else "seeds") / document.file
        text = location.read_text(encoding="utf-8")
        assert missing_headings(document, text) == [], document.file


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared (the source documents) is not beside the repository")
def test_every_seed_document_is_registered() -> None:
    registry = load_registry(default_specs_dir())
    seeds = sorted(p.name for p in (SHARED / "seeds").glob("*.txt"))
    assert seeds == sorted(d.file for d in registry.documents if d.is_seed)


def test_documents_in_the_repository_are_there() -> None:
    for document in load_registry(default_specs_dir()).documents:
        if document.path is not None:
            assert (REPOSITORY / document.path).is_file(), document.path
