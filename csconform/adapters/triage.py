"""An implementation's triage file: every disagreement with the spec, with its verdict and evidence.

One YAML file per adapter and release of the package it adapts (e.g.
``csconform/adapters/cstorch/triage.yaml``)::

    implementation: cerebras.pytorch 2.10.0, CPU backend
    package: cerebras-pytorch          # the distribution the verdicts are about ...
    version: 2.10.0                    # ... and the release they hold for
    entries:
      - ids: [GRADSCALER-010]          # rule ids or test node ids
        verdict: departs-from-docs     # or spec-claims-too-much, or not-observable
        finding: what the implementation does, in a sentence or two
        evidence: the package's file:line, or the observed value or exception
        resolution: what was done about it

*departs-from-docs*: the implementation does not do what its own documents say; the rule stays and
the ids are expected failures (``--expected-failures FILE`` reads them from this file).
*reference-choice*: a ``reference`` rule (our engine's own choice where nothing public decides)
that the implementation decides otherwise; the rule stays, informative, and the ids are expected
failures too.
*spec-claims-too-much*: our rule said more than the documents; the rule was fixed (the entry says how),
so nothing is expected to fail. *not-observable*: the behaviour cannot be seen on this backend; the
adapter raises ``Unsupported`` and the matrix shows ``unsupported``. The report publishes the table.

Verdicts belong to one release: :func:`check_installed_version` refuses a triage whose ``version`` is
not the installed version of its ``package``, so a new release is triaged afresh instead of
inheriting the old verdicts (the conformance run stops with a usage error saying so).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from csconform.documents import read_document, read_text
from csconform.errors import InstanceFormatError

VERDICTS = ("departs-from-docs", "reference-choice", "spec-claims-too-much", "not-observable")
EXPECTED_TO_FAIL = ("departs-from-docs", "reference-choice")
FIELDS = ("ids", "verdict", "finding", "evidence", "resolution")


@dataclass(frozen=True)
class TriageEntry:
    ids: tuple[str, ...]
    verdict: str
    finding: str
    evidence: str
    resolution: str


@dataclass(frozen=True)
class Triage:
    path: Path
    implementation: str
    package: str
    version: str
    entries: tuple[TriageEntry, ...]

    def expected_failures(self) -> list[str]:
        """The ids that fail because the implementation departs from its own documents, or decides
        otherwise than a reference rule."""
        return [i for entry in self.entries if entry.verdict in EXPECTED_TO_FAIL for i in entry.ids]


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def load_triage(path: Path) -> Triage:
    """Read and validate a triage file; every problem names the file and the entry."""
    data = read_document(path, what="triage file", top="any").data
    if not isinstance(data, dict) or not _text(data.get("implementation")) or not isinstance(data.get("entries"), list):
        raise InstanceFormatError(f"{path}: expected a mapping with 'implementation' and a list of 'entries'")
    for key in ("package", "version"):
        if not _text(data.get(key)):  # a string: an unquoted version such as 2.10 would read as 2.1
            raise InstanceFormatError(
                f"{path}: '{key}' must be text naming the distribution and the release the verdicts hold for "
                '(e.g. package: cerebras-pytorch, version: "2.10.0")'
            )
    entries = []
    for index, raw in enumerate(data["entries"]):
        where = f"{path}: entry {index + 1}"
        if not isinstance(raw, dict):
            raise InstanceFormatError(f"{where}: must be a mapping with {', '.join(FIELDS)}")
        unknown = sorted(set(raw) - set(FIELDS))
        missing = [name for name in FIELDS if name not in raw]
        if unknown or missing:
            raise InstanceFormatError(f"{where}: unknown keys {unknown}, missing keys {missing}")
        ids = raw["ids"]
        if not isinstance(ids, list) or not ids or not all(_text(i) for i in ids):
            raise InstanceFormatError(f"{where}: 'ids' must be a non-empty list of rule or test ids")
        if raw["verdict"] not in VERDICTS:
            raise InstanceFormatError(f"{where}: verdict {raw['verdict']!r} is not one of {', '.join(VERDICTS)}")
        for name in ("finding", "evidence", "resolution"):
            if not _text(raw[name]):
                raise InstanceFormatError(f"{where}: '{name}' must be non-empty text")
        entries.append(
            TriageEntry(
                tuple(str(i).strip() for i in ids),
                raw["verdict"],
                " ".join(raw["finding"].split()),
                " ".join(raw["evidence"].split()),
                " ".join(raw["resolution"].split()),
            )
        )
    return Triage(
        path, data["implementation"].strip(), data["package"].strip(), data["version"].strip(), tuple(entries)
    )


def check_installed_version(triage: Triage) -> str:
    """The installed version of the triage's package; refuse a triage written for another release."""
    try:
        installed = metadata.version(triage.package)
    except metadata.PackageNotFoundError:
        raise InstanceFormatError(
            f"{triage.path} holds the verdicts for {triage.package} {triage.version}, which is not installed"
        ) from None
    if installed != triage.version:
        raise InstanceFormatError(
            f"{triage.path} holds the verdicts for {triage.package} {triage.version}, but {triage.package} "
            f"{installed} is installed: a release gets its own triage, none is inherited. Run the suite "
            f"without --expected-failures, triage what fails in a copy of this file with version: {installed}, "
            "and pass that one"
        )
    return installed


def read_expected_failures(path: Path) -> list[str]:
    """The ids an implementation is expected to fail: a triage YAML file's (``.yaml``/``.yml``), or
    a plain text file of ids, one per line, ``#`` starting a comment."""
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        return load_triage(path).expected_failures()
    entries = []
    for number, line in enumerate(read_text(path, what="list of expected failures").splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        if any(character.isspace() for character in entry) or not entry.isprintable():
            raise InstanceFormatError(f"{path}:{number}: expected one rule or test id per line, got {entry[:60]!r}")
        entries.append(entry)
    return entries
