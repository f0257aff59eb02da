"""The registry of source documents (``specs/sources.yaml``) that rules may cite.

A rule's source is ``ID#Section``: the short id of a document and a section of it. Registering the
sections up front lets the loader refuse a source that names no document or no section, and lets
the coverage check ask the question that matters: does every section of every document have a rule?

``docs/sources.md`` describes every registered document under a heading that is its id: its public
title and address, the release it describes, and what the spec takes from each section, in our own
words. The documents marked ``seed`` are the Cerebras documents the spec was first written from; a
``documented`` rule must cite one of them. A document registered with a ``path`` has its text in
the repository itself: verbatim excerpts of the vendor's package or Model Zoo (``specs/vendor/``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.documents import read_document
from csconform.errors import SpecError

SOURCES_FILE = "sources.yaml"
SOURCES_PAGE = "docs/sources.md"
"""Where, relative to the repository, each registered document is described under its id."""
DOCUMENT_KEYS = {"id", "title", "seed", "sections", "unheaded_sections", "path"}
# Lower-case words joined by '-' (a release number may carry dots): readable in a rule's source,
# usable as an anchor of docs/sources.md, and never mistaken for a file name.
ID_PATTERN = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    sections: tuple[str, ...]
    unheaded_sections: tuple[str, ...] = ()
    path: str | None = None
    """Where the text is, relative to the repository; None for a document published elsewhere."""
    seed: bool = False
    """One of the Cerebras documents the spec was first written from: a documented rule cites one."""


@dataclass(frozen=True)
class Registry:
    documents: tuple[Document, ...]

    def document(self, document_id: str) -> Document | None:
        return next((d for d in self.documents if d.id == document_id), None)

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.documents]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SpecError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def _document(entry: Any, where: str) -> Document:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise SpecError(f"{where}: expected a mapping with 'id', 'title' and 'sections'")
    unknown = sorted(str(key) for key in entry if key not in DOCUMENT_KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(DOCUMENT_KEYS))}")
    document_id = entry["id"]
    if not ID_PATTERN.match(document_id):
        raise SpecError(f"{where}: id {document_id!r} must be lower-case words joined by '-', e.g. 'amp-api'")
    sections = _strings(entry.get("sections"), f"{where} ({document_id}) sections")
    unheaded = _strings(entry.get("unheaded_sections", []) or [], f"{where} unheaded_sections")
    location = entry.get("path")
    if location is not None and not (isinstance(location, str) and location.strip()):
        raise SpecError(f"{where}: 'path' must be a path relative to the repository")
    seed = entry.get("seed", False)
    if not isinstance(seed, bool):
        raise SpecError(f"{where}: 'seed' must be true or false")
    title = str(entry.get("title", document_id))
    return Document(document_id, title, sections, unheaded, location, seed)


def load_registry(specs_dir: Path) -> Registry:
    path = specs_dir / SOURCES_FILE
    data = read_document(path, what="sources file", top="any").data
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        raise SpecError(f"{path}: expected a mapping with a 'documents' list")
    documents: list[Document] = []
    for index, entry in enumerate(data["documents"]):
        document = _document(entry, f"{path}: documents[{index}]")
        if any(d.id == document.id for d in documents):
            raise SpecError(f"{path}: documents[{index}]: id {document.id!r} is registered twice")
        documents.append(document)
    return Registry(tuple(documents))


def missing_headings(document: Document, text: str) -> list[str]:
    """Registered sections that do not appear as a heading line of the document's text.

    Cerebras' documentation pages mark headings as a line of their own, often ending in ``#``; an
    API reference heading is a signature that begins with the section name (``class cerebras.
    pytorch.amp.GradScaler[source]#``). Markdown uses ``## `` headings, and a registered name may be
    the start of a longer heading there.
    """
    raw = [line.strip() for line in text.splitlines()]
    lines = [line.rstrip("#").strip().rstrip(".") for line in raw]
    signatures = [line.removeprefix("class ") for line in raw if line.endswith("#")]
    markdown = [re.sub(r"^#+\s*", "", line) for line in lines if line.startswith("#")]
    missing = []
    for section in document.sections:
        if section in document.unheaded_sections or section in lines:
            continue
        if any(h == section or h.startswith(section + " ") for h in markdown):
            continue
        if any(s.startswith(section) and s[len(section) : len(section) + 1] in ("[", "(") for s in signatures):
            continue
        missing.append(section)
    return missing
