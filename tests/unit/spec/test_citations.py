"""Every citation in the repository points into it: docs/sources.md, by document id and section.

A reader of the package must be able to follow a citation, so no tracked file may cite a file that
lives outside the repository: the design notes the spec began from, the seed documents by their
file names or numbers, or the folder beside the checkout. And every ``ID#Section`` a tracked file
writes must name a registered document and one of its sections.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from csconform.spec import default_specs_dir, load_registry

REPOSITORY = Path(__file__).resolve().parents[3]
# Written so that this file does not match itself.
OUTSIDE_CITATIONS = {
    "the design notes": re.compile(r"\bFACTS" + r"\.md\b"),
    "a seed document's file name": re.compile(r"\b\d{3}_[0-9a-f]{16}" + r"\.txt\b"),
    "a seed document's number": re.compile(r"\bseeds? " + r"00\d\b", re.IGNORECASE),
    "the folder beside the checkout": re.compile(r"\.\./" + r"shared\b"),
}


def _tracked_texts() -> dict[str, str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPOSITORY, capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    texts = {}
    for name in filter(None, listed.decode().split("\0")):
        try:
            texts[name] = (REPOSITORY / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
    return texts


def _outside_citations(texts: dict[str, str]) -> list[str]:
    return [
        f"{name}:{text.count(chr(10), 0, found.start()) + 1}: cites {what} ({found.group()!r})"
        for name, text in texts.items()
        for what, pattern in OUTSIDE_CITATIONS.items()
        for found in pattern.finditer(text)
    ]


def test_no_tracked_file_cites_a_file_outside_the_repository() -> None:
    assert _outside_citations(_tracked_texts()) == []


def test_the_check_finds_each_kind_of_outside_citation() -> None:
    texts = {
        "a.py": "# see FACTS" + ".md#Hardware",
        "b.yaml": "source: 000_125af87d7ddd17a1" + ".txt#Static Graphs",
        "c.md": "as Seed " + "003 says",
        "d.md": "a copy of ../" + "shared/benchmarks",
        "e.md": "pytorch-limitations#Static Graphs, amp-api, public-facts#Hardware",
    }
    assert [line.split(":")[0] for line in _outside_citations(texts)] == ["a.py", "b.yaml", "c.md", "d.md"]


def _unknown_sections(texts: dict[str, str]) -> list[str]:
    documents = load_registry(default_specs_dir()).documents
    ids = "|".join(re.escape(d.id) for d in sorted(documents, key=lambda d: -len(d.id)))
    citation = re.compile(rf"(?<![\w.#/-])({ids})#")
    sections = {d.id: d.sections for d in documents}
    return [
        f"{name}: {text[found.start() : found.end() + 40]!r}"
        for name, text in texts.items()
        for found in citation.finditer(text)
        if not any(
            " ".join(text[found.end() : found.end() + 200].split()).startswith(s) for s in sections[found.group(1)]
        )
    ]


def test_every_id_and_section_a_tracked_file_cites_is_registered() -> None:
    assert _unknown_sections(_tracked_texts()) == []


def test_the_check_finds_an_unregistered_section() -> None:
    texts = {"ok.md": "(amp-api#cerebras.pytorch.amp.set_half_dtype: the default)", "bad.md": "amp-api" + "#GradScaler"}
    assert [line.split(":")[0] for line in _unknown_sections(texts)] == ["bad.md"]
