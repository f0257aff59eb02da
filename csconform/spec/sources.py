"""The registry of source documents (``specs/sources.yaml``) that rules may cite.

A rule's source is ``FILE#Section``. Registering the sections up front lets the loader refuse a
source that names no document or no section, and lets the coverage check ask the question that
matters: does every section of every document have a rule?

The seed documents and FACTS.md live beside the repository (``../shared``). A document registered
with a ``path`` lives in the repository itself: the vendor's public API, as verbatim excerpts of its
package (``specs/vendor/``), for what neither the seeds nor FACTS.md say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.documents import read_document
from csconform.errors import SpecError

SOURCES_FILE = "sources.yaml"
# The one registered document that is not a seed: public facts that fill the seeds' gaps.
FACTS_FILE = "FACTS.md"


@dataclass(frozen=True)
class Document:
    file: str
    title: str
    sections: tuple[str, ...]
    unheaded_sections: tuple[str, ...] = ()
    path: str | None = None
    """Where the text is, relative to the repository; None for the shared documents."""

    @property
    def is_seed(self) -> bool:
        """A seed document (a documented rule must cite one), not FACTS.md or the vendor's API."""
        return self.file != FACTS_FILE and self.path is None


@dataclass(frozen=True)
class Registry:
    documents: tuple[Document, ...]

    def document(self, file: str) -> Document | None:
        return next((d for d in self.documents if d.file == file), None)

    @property
    def files(self) -> list[str]:
        return [d.file for d in self.documents]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise SpecError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def load_registry(specs_dir: Path) -> Registry:
    path = specs_dir / SOURCES_FILE
    data = read_document(path, what="sources file", top="any").data
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        raise SpecError(f"{path}: expected a mapping with a 'documents' list")
    documents = []
    for index, entry in enumerate(data["documents"]):
        where = f"{path}: documents[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise SpecError(f"{where}: expected a mapping with 'file', 'title' and 'sections'")
        sections = _strings(entry.get("sections"), f"{where} ({entry['file']}) sections")
        unheaded = _strings(entry.get("unheaded_sections", []) or [], f"{where} unheaded_sections")
        location = entry.get("path")
        if location is not None and not (isinstance(location, str) and location.strip()):
            raise SpecError(f"{where}: 'path' must be a path relative to the repository")
        title = str(entry.get("title", entry["file"]))
        documents.append(Document(entry["file"], title, sections, unheaded, location))
    return Registry(tuple(documents))


def missing_headings(document: Document, text: str) -> list[str]:
    """Registered sections that do not appear as a heading line of the document's text.

    Seed documents mark headings as a line of their own, often ending in ``#``; an API reference
    heading is a signature that begins with the section name (``class cerebras.pytorch.amp.
    GradScaler[source]#``). FACTS.md uses ``## `` headings, and a registered name may be the start
    of a longer heading there.
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
