"""The releases the spec knows (``specs/releases.yaml``) and the version ranges rules hold for.

Limitations change between releases: training with evaluation in one run was refused on the CS
system in 1.7 and is the usual loop since 2.2.1. A rule therefore may carry ``releases``, a version
range in the PEP 440 specifier syntax (``">=1.8.0,<2.2.1"``); a rule without one holds for every
release. The catalogue lists every release a range can select, oldest first, with its Model Zoo tag
and commit (the evidence the rules cite is read at those commits) and its params-file layout.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from csconform.documents import read_document
from csconform.errors import SpecError, UnknownNameError

RELEASES_FILE = "releases.yaml"
LAYOUTS = ("flat", "trainer")
RELEASE_KEYS = {"name", "tag", "commit", "date", "layout"}


@dataclass(frozen=True)
class Release:
    """One software release: its number, where its Model Zoo is, and the layout of its params files."""

    name: str
    tag: str
    commit: str
    date: str
    layout: str

    @property
    def version(self) -> Version:
        return Version(self.name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Catalogue:
    """Every known release, oldest first."""

    releases: tuple[Release, ...]

    @property
    def names(self) -> list[str]:
        return [release.name for release in self.releases]

    @property
    def newest(self) -> Release:
        return self.releases[-1]

    def get(self, name: str) -> Release:
        """The release called ``name``; a prefix such as ``1.9`` means the newest release it starts."""
        text = str(name).strip().removeprefix("v")
        exact = [release for release in self.releases if release.name == text]
        prefixed = [release for release in self.releases if release.name.startswith(text + ".")]
        if exact or prefixed:
            return (exact or prefixed)[-1]
        raise UnknownNameError(f"unknown release {name!r}; known releases: {', '.join(self.names)}")

    def selected(self, releases: str | None) -> list[Release]:
        """The releases a range selects (all of them for ``None``)."""
        if releases is None:
            return list(self.releases)
        specifier = parse_range(releases)
        return [release for release in self.releases if release.version in specifier]


def parse_range(text: str) -> SpecifierSet:
    """A rule's ``releases`` range; a malformed one is a :class:`SpecError`."""
    try:
        specifier = SpecifierSet(text)
    except InvalidSpecifier:
        raise SpecError(f"releases {text!r} is not a version range such as '>=1.8.0,<2.2.1'") from None
    if not str(specifier):
        raise SpecError("releases must not be empty; leave the key out for a rule that holds for every release")
    return specifier


def holds_for(releases: str | None, release: Release) -> bool:
    """Whether a rule with this ``releases`` range is in force in ``release``."""
    return releases is None or release.version in parse_range(releases)


def _release(entry: Any, where: str) -> Release:
    if not isinstance(entry, dict):
        raise SpecError(f"{where}: expected a mapping with {', '.join(sorted(RELEASE_KEYS))}")
    unknown = sorted(set(entry) - RELEASE_KEYS)
    missing = sorted(RELEASE_KEYS - set(entry))
    if unknown or missing:
        raise SpecError(f"{where}: unknown keys {unknown} / missing keys {missing}")
    name, date = str(entry["name"]), entry["date"]
    try:
        Version(name)
    except InvalidVersion:
        raise SpecError(f"{where}: {name!r} is not a release number") from None
    if entry["layout"] not in LAYOUTS:
        raise SpecError(f"{where}: layout {entry['layout']!r} is not one of {', '.join(LAYOUTS)}")
    if not isinstance(date, datetime.date | str):
        raise SpecError(f"{where}: date must be YYYY-MM-DD")
    return Release(name, str(entry["tag"]), str(entry["commit"]), str(date), str(entry["layout"]))


def load_catalogue(specs_dir: Path) -> Catalogue:
    """Read ``releases.yaml``; a missing file is an empty catalogue (then no rule may name releases)."""
    path = specs_dir / RELEASES_FILE
    if not path.is_file():
        return Catalogue(())
    data = read_document(path, what="releases file", top="any").data
    if not isinstance(data, dict) or set(data) != {"releases"} or not isinstance(data["releases"], list):
        raise SpecError(f"{path}: expected a mapping with one key, 'releases', a list")
    releases = tuple(_release(entry, f"{path}: releases[{i}]") for i, entry in enumerate(data["releases"]))
    versions = [release.version for release in releases]
    if versions != sorted(versions) or len(set(versions)) != len(versions):
        raise SpecError(f"{path}: releases must be listed oldest first, each once")
    if not releases:
        raise SpecError(f"{path}: no releases")
    return Catalogue(releases)
