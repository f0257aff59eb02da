"""The differential triage: a verdict for every class, per release of the implementation.

One YAML file per implementation (``csconform/adapters/cstorch/differential.yaml``), read with
PyYAML's safe loader::

    implementation: csconform.adapters.cstorch
    versions:
      cerebras.pytorch 2.10.0:              # the implementation's version (Implementation.version)
        - signature: "grad_scaler | GradScaler.update | result | A refuses (GradScalerUsageError), B returns"
          category: departs-from-docs       # see CATEGORIES
          finding: what differs, in a sentence or two
          cause: the place in the implementation's source (file:line) that makes it differ
          resolution: what was done about it
          reason: why the reference differs (reference-choice only: the package crashes, or
                  contradicts its own documents)
          target: cpu
          repro: |                          # the minimal program, as `csconform diff` printed it
            scaler = impl.amp.GradScaler(loss_scale=16384.0)
            scaler.update(0.0)

Verdicts are given per release: a class is judged by the entries of the running implementation's
version only, so a new release starts with every class untriaged rather than inheriting verdicts.
Every entry keeps its repro, so an entry is checked even when a bounded run did not come across its
class: it is run again, and an entry whose repro no longer shows the class is **stale** (the
expected difference is gone: an unexpected pass) and fails the run, as an entry whose class is
found but was never triaged (**untriaged**) does. Entries of category ``our-bug`` record engine bugs
the fuzzer found and that were fixed: their repros must *not* show the class any more; one that
does is a **regression** and fails the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.documents import read_document
from csconform.errors import CsConformError, InstanceFormatError
from csconform.testing.differential.areas import AREA_NAMES
from csconform.testing.differential.program import Program, parse_statements
from csconform.testing.differential.signature import Signature

CATEGORIES = {
    "spec-claims-too-much": "spec claims too much",
    "departs-from-docs": "package departs from its documents",
    "reference-choice": "reference choice",
    "not-observable": "not observable on CPU",
    "our-bug": "our bug (fixed in the engine)",
}
"""Category -> how the report names it."""

FIELDS = ("signature", "category", "finding", "cause", "resolution", "target", "repro")
OPTIONAL = ("reason",)

SOURCE_LOCATION = re.compile(r"[\w./-]+\.(?:py|h|cpp|c|pyx):\d+")
"""A file and line, as in ``amp/grad_scaler.py:545``: what every verdict but ``our-bug`` must name (an
engine bug's cause is code that was changed, so its lines no longer exist)."""

FAILING = ("untriaged", "stale", "regression", "flaky")
"""Verdicts that fail the run."""


@dataclass(frozen=True)
class Entry:
    signature: Signature
    category: str
    finding: str
    cause: str
    resolution: str
    reason: str
    repro: Program


@dataclass(frozen=True)
class Triage:
    path: Path
    implementation: str
    versions: Mapping[str, tuple[Entry, ...]]

    def entries(self, version: str) -> tuple[Entry, ...]:
        return self.versions.get(version, ())


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise InstanceFormatError(f"{where}: must be a mapping with {', '.join(FIELDS)}")
    unknown = sorted(set(raw) - set(FIELDS) - set(OPTIONAL))
    missing = [name for name in FIELDS if name not in raw]
    if unknown or missing:
        raise InstanceFormatError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    for name in (*FIELDS, *[o for o in OPTIONAL if o in raw]):
        if not _text(raw[name]):
            raise InstanceFormatError(f"{where}: '{name}' must be non-empty text")
    if raw["category"] not in CATEGORIES:
        raise InstanceFormatError(f"{where}: category {raw['category']!r} is not one of {', '.join(CATEGORIES)}")
    if raw["category"] != "our-bug" and not SOURCE_LOCATION.search(raw["cause"]):
        raise InstanceFormatError(
            f"{where}: 'cause' must locate the difference in the implementation's source as file:line"
        )
    if raw["category"] == "reference-choice" and "reason" not in raw:
        raise InstanceFormatError(
            f"{where}: a reference-choice entry says why the reference differs from the package ('reason')"
        )
    try:
        signature = Signature.parse(raw["signature"])
        if signature.area not in AREA_NAMES:
            raise InstanceFormatError(f"{where}: unknown area {signature.area!r}")
        source = tuple(line.rstrip() for line in raw["repro"].strip().splitlines() if line.strip())
        parse_statements(source)
    except CsConformError as error:
        raise InstanceFormatError(f"{where}: {error}") from None
    return Entry(
        signature,
        raw["category"],
        " ".join(raw["finding"].split()),
        " ".join(raw["cause"].split()),
        " ".join(raw["resolution"].split()),
        " ".join(raw.get("reason", "").split()),
        Program(signature.area, raw["target"].strip(), source),
    )


def load_triage(path: Path) -> Triage:
    """Read and check a differential triage file; every problem names the file and the entry."""
    data = read_document(path, what="differential triage file", top="any").data
    if (
        not isinstance(data, dict)
        or not _text(data.get("implementation"))
        or not isinstance(data.get("versions"), dict)
    ):
        raise InstanceFormatError(f"{path}: expected a mapping with 'implementation' and 'versions'")
    versions = {}
    for version, raw_entries in data["versions"].items():
        if not isinstance(raw_entries, list):
            raise InstanceFormatError(f"{path}: version {version!r}: expected a list of entries")
        entries = tuple(_entry(raw, f"{path}: version {version!r}, entry {i + 1}") for i, raw in enumerate(raw_entries))
        seen: set[Signature] = set()
        for entry in entries:
            if entry.signature in seen:
                raise InstanceFormatError(f"{path}: version {version!r}: two entries for {entry.signature}")
            seen.add(entry.signature)
        versions[str(version)] = entries
    return Triage(path, data["implementation"].strip(), versions)


def default_triage_path(module: Any) -> Path | None:
    """``differential.yaml`` beside an implementation package's ``__init__``, if there is one."""
    paths = getattr(module, "__path__", None)
    if not paths:
        return None
    candidate = Path(next(iter(paths))) / "differential.yaml"
    return candidate if candidate.is_file() else None
