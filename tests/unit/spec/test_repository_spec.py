"""The repository's own spec: it loads, every documented section has a rule, and the sources hold.

Every registered document is described in docs/sources.md under its id, with its sections; the
sections of the documents kept in the repository are headings there; and the seed documents, where
their published text is beside the checkout (``shared/seeds`` next to it, as in CI), are exactly the
registered seed documents, each section a heading of its text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from csconform.spec import default_specs_dir, load_registry, load_spec, uncovered_sections
from csconform.spec.sources import SOURCES_PAGE, Document, missing_headings

REPOSITORY = Path(__file__).resolve().parents[3]
# The published text of the seed documents, beside the checkout: read as data, to check headings.
SEED_TEXTS = REPOSITORY.parent / "shared" / "seeds"


def test_repository_spec_loads() -> None:
    spec = load_spec()
    assert len(spec) > 0


def test_every_registered_section_has_a_rule() -> None:
    registry = load_registry(default_specs_dir())
    assert uncovered_sections(load_spec(), registry) == []


def test_pending_rules_say_why() -> None:
    for rule in load_spec().by_status("pending"):
        assert rule.reason, rule.id


def _page_blocks() -> dict[str, str]:
    """docs/sources.md cut at its ``## `` headings: heading -> the text up to the next one."""
    text = (REPOSITORY / SOURCES_PAGE).read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_sources_page_describes_each_registered_document_under_its_id() -> None:
    documents = load_registry(default_specs_dir()).documents
    blocks = _page_blocks()
    assert list(blocks) == [d.id for d in documents]
    for document in documents:
        block = blocks[document.id]
        subheadings = re.findall(r"^### (.+)$", block, flags=re.MULTILINE)
        assert subheadings == list(document.sections), document.id
        assert "- **Title:**" in block, document.id
        assert ("- **Seed document.**" in block) == document.seed, document.id
        if document.seed:
            assert re.search(r"^- \*\*Address:\*\* https://\S+", block, flags=re.MULTILINE), document.id


def test_documents_in_the_repository_are_there_with_their_sections() -> None:
    for document in load_registry(default_specs_dir()).documents:
        if document.path is not None:
            text = (REPOSITORY / document.path).read_text(encoding="utf-8")
            assert missing_headings(document, text) == [], document.id


def _matching(seeds: list[Document], text: str) -> list[str]:
    return [d.id for d in seeds if missing_headings(d, text) == []]


@pytest.mark.skipif(not SEED_TEXTS.is_dir(), reason="the seed documents' texts are not beside the checkout")
def test_each_seed_text_is_one_registered_seed_document_with_its_headings() -> None:
    """Each text matches the one seed document whose every section is a heading of it, and back."""
    seeds = [d for d in load_registry(default_specs_dir()).documents if d.seed]
    matched = {
        path.name: _matching(seeds, path.read_text(encoding="utf-8")) for path in sorted(SEED_TEXTS.glob("*.txt"))
    }
    assert all(len(ids) == 1 for ids in matched.values()), matched
    assert sorted(ids[0] for ids in matched.values()) == sorted(d.id for d in seeds)
