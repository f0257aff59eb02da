"""An implementation's triage: every known disagreement, with its verdict and evidence, for one release.

One YAML file per release of the package an implementation stands for, in a ``triage/`` folder beside
it (``csconform/adapters/cstorch/triage/2.10.0.yaml``), with a section for each kind of run::

    implementation: csconform.adapters.cstorch   # the module under test (--engine, diff's --against)
    package: cerebras-pytorch                    # the distribution the verdicts are about ...
    version: "2.10.0"                            # ... and its release, quoted (YAML reads 2.10 as 2.1)
    rules:                                       # what `csconform check` and the pytest plugin expect
      - ids: [GRADSCALER-024]                    # rule ids or test ids
        verdict: reference-choice
        finding: what the implementation does, in a sentence or two
        evidence: the package's file:line, or the observed value or exception
        resolution: what was done about it
    differential:                                # what `csconform diff` expects
      - signature: "grad_scaler | GradScaler.update | result | A refuses (GradScalerUsageError), B returns"
        verdict: departs-from-docs
        finding: what differs
        cause: amp/grad_scaler.py:545 (the file:line of the implementation that makes it differ)
        resolution: what was done about it
        reason: why the reference differs (a reference-choice entry must say)
        target: cpu
        repro: |                                 # the minimal program, as `csconform diff` printed it
          scaler = impl.amp.GradScaler(loss_scale=16384.0)
          scaler.update(0.0)

The verdicts (:data:`VERDICTS`) are the same in both sections:

- ``departs-from-docs``: the implementation does not do what its own documents say. Its rule or
  test ids are expected to fail; its class of difference is expected to show.
- ``reference-choice``: a ``reference`` rule (the engine's own choice where no public document
  decides) that the implementation decides otherwise. Expected to fail, expected to show; a
  differential entry says why the reference differs (``reason``).
- ``spec-claims-too-much``: our rule said more than the documents and was fixed (the resolution says
  how): its ids are not expected to fail. A class with this verdict is expected to show.
- ``not-observable``: the behaviour cannot be seen on this backend: the adapter raises
  ``Unsupported`` (its checks are ``unsupported``, not failures), and a class is a difference in
  what the real system cannot read, expected to show.
- ``our-bug``: the reference engine was wrong and was fixed: nothing is expected to fail, and the
  class's repro must not show it any more (``csconform diff`` calls it a regression if it does).

Verdicts belong to one implementation and one release: :func:`check_applies` refuses a triage named
for another module, or whose ``version`` is not the installed version of its ``package``, so a new
release is triaged afresh instead of inheriting the old verdicts. One id, one entry: two entries
that name the same rule, test or class are refused, whether their verdicts agree or not.

A plain text list of rule or test ids (one per line, ``#`` starting a comment) also serves as
expected failures (:func:`read_expected_failures`); it names no implementation or release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from csconform.documents import read_document, read_text
from csconform.errors import (
    ConflictingTriageError,
    CsConformError,
    InstanceFormatError,
    TriageMismatchError,
)
from csconform.testing.differential.areas import AREA_NAMES
from csconform.testing.differential.program import Program, parse_statements
from csconform.testing.differential.signature import Signature


@dataclass(frozen=True)
class Verdict:
    """One word of the vocabulary, and what a run expects of an entry that gives it."""

    name: str
    title: str
    """How a report names it."""
    rule_fails: bool
    """The ids of a ``rules`` entry are expected to fail."""
    class_shows: bool
    """The repro of a ``differential`` entry is expected to show its class (else: never again)."""


VERDICTS = {
    verdict.name: verdict
    for verdict in (
        Verdict("departs-from-docs", "package departs from its documents", rule_fails=True, class_shows=True),
        Verdict("reference-choice", "reference choice", rule_fails=True, class_shows=True),
        Verdict("spec-claims-too-much", "spec claims too much", rule_fails=False, class_shows=True),
        Verdict("not-observable", "not observable on CPU", rule_fails=False, class_shows=True),
        Verdict("our-bug", "our bug (fixed in the engine)", rule_fails=False, class_shows=False),
    )
}

FOLDER = "triage"
"""The folder beside an implementation package that holds its triage files, one per release."""

HEADER = ("implementation", "package", "version")
SECTIONS = ("rules", "differential")
RULE_FIELDS = ("ids", "verdict", "finding", "evidence", "resolution")
CLASS_FIELDS = ("signature", "verdict", "finding", "cause", "resolution", "target", "repro")
CLASS_OPTIONAL = ("reason",)

SOURCE_LOCATION = re.compile(r"[\w./-]+\.(?:py|h|cpp|c|pyx):\d+")
"""A file and line, as in ``amp/grad_scaler.py:545``: what a differential entry's ``cause`` must name
(except ``our-bug``: an engine bug's cause is code that was changed, so its lines no longer exist)."""


@dataclass(frozen=True)
class RuleEntry:
    """Rules or tests the implementation disagrees with: ``ids`` are rule ids or test ids."""

    ids: tuple[str, ...]
    verdict: str
    finding: str
    evidence: str
    resolution: str


@dataclass(frozen=True)
class ClassEntry:
    """A class of difference from the reference engine, with the minimal program that shows it."""

    signature: Signature
    verdict: str
    finding: str
    cause: str
    resolution: str
    reason: str
    repro: Program


@dataclass(frozen=True)
class Triage:
    path: Path
    implementation: str
    package: str
    version: str
    rules: tuple[RuleEntry, ...]
    differential: tuple[ClassEntry, ...]

    @property
    def release(self) -> str:
        return f"{self.package} {self.version}"

    def expected_failures(self) -> list[str]:
        """The rule and test ids whose verdict expects them to fail."""
        return [i for entry in self.rules if VERDICTS[entry.verdict].rule_fails for i in entry.ids]

    def unobservable(self) -> list[str]:
        """The rule and test ids whose verdict says the implementation cannot show them (``not-observable``):
        a test of one of them that passes shows the verdict no longer holds."""
        return [i for entry in self.rules if entry.verdict == "not-observable" for i in entry.ids]


class Expectations(NamedTuple):
    """What a run of the conformance suite expects of the implementation under test."""

    failing: list[str]
    """Ids expected to fail."""
    unobservable: list[str]
    """Ids the implementation cannot show: their tests are expected to be unsupported, never to pass."""
    release: str
    """The release the verdicts hold for ("" for a plain list of ids)."""


# --- reading ------------------------------------------------------------------------------------------


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _prose(value: str) -> str:
    return " ".join(value.split())


def _checked_fields(raw: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """``raw`` if it is a mapping with exactly these fields, every one but ``ids`` non-empty text."""
    if not isinstance(raw, dict):
        raise InstanceFormatError(f"{where}: must be a mapping with {', '.join(required)}")
    unknown = sorted(str(key) for key in raw if key not in required and key not in optional)
    missing = [name for name in required if name not in raw]
    if unknown or missing:
        raise InstanceFormatError(f"{where}: unknown keys {unknown}, missing keys {missing}")
    for name in (*required, *optional):
        if name in raw and name != "ids" and not _text(raw[name]):
            raise InstanceFormatError(f"{where}: '{name}' must be non-empty text")
    if raw["verdict"] not in VERDICTS:
        raise InstanceFormatError(f"{where}: verdict {raw['verdict']!r} is not one of {', '.join(VERDICTS)}")
    return raw


def _rule_entry(raw: Any, where: str) -> RuleEntry:
    raw = _checked_fields(raw, where, RULE_FIELDS)
    ids = raw["ids"]
    if not isinstance(ids, list) or not ids or not all(_text(i) for i in ids):
        raise InstanceFormatError(f"{where}: 'ids' must be a non-empty list of rule or test ids")
    return RuleEntry(
        tuple(i.strip() for i in ids),
        raw["verdict"],
        _prose(raw["finding"]),
        _prose(raw["evidence"]),
        _prose(raw["resolution"]),
    )


def _class_entry(raw: Any, where: str) -> ClassEntry:
    raw = _checked_fields(raw, where, CLASS_FIELDS, CLASS_OPTIONAL)
    verdict = raw["verdict"]
    if verdict != "our-bug" and not SOURCE_LOCATION.search(raw["cause"]):
        raise InstanceFormatError(
            f"{where}: 'cause' must locate the difference in the implementation's source as file:line"
        )
    if verdict == "reference-choice" and "reason" not in raw:
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
    return ClassEntry(
        signature,
        verdict,
        _prose(raw["finding"]),
        _prose(raw["cause"]),
        _prose(raw["resolution"]),
        _prose(raw.get("reason", "")),
        Program(signature.area, raw["target"].strip(), source),
    )


def _refuse_repeats(path: Path, section: str, named: list[tuple[str, int, str]]) -> None:
    """Refuse two entries that name one id, whether their verdicts agree or not (a parametrized case,
    ``test_x[0]``, is an id of its own: it may have a verdict other than ``test_x``'s). ``named`` holds
    (id, entry number, verdict)."""
    seen: dict[str, tuple[int, str]] = {}
    for name, number, verdict in named:
        if name in seen:
            other_number, other_verdict = seen[name]
            places = (f"{section} entry {other_number}", f"{section} entry {number}")
            what = f"both name {name}"
            if verdict != other_verdict:
                what = f"give {name} two verdicts ({other_verdict}, {verdict})"
            raise ConflictingTriageError(
                f"{path}: {places[0]} and {places[1]} {what}: one id, one entry", key=name, places=places
            )
        seen[name] = (number, verdict)


def _version(value: object, path: Path) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise InstanceFormatError(
            f"{path}: 'version' reads as the number {value!r}, not as the release written (an unquoted 2.10 is "
            f'the number 2.1): quote it, e.g. version: "2.10.0"'
        )
    if not _text(value):
        raise InstanceFormatError(
            f"{path}: 'version' must be text naming the release, quoted (e.g. version: \"2.10.0\")"
        )
    return str(value).strip()


def load_triage(path: Path) -> Triage:
    """Read and check a triage file; every problem names the file and the entry."""
    path = Path(path)
    data = read_document(path, what="triage file", top="any").data
    expected = f"{', '.join(HEADER)} and the sections {' and '.join(SECTIONS)}"
    if not isinstance(data, dict):
        raise InstanceFormatError(f"{path}: expected a mapping with {expected}")
    unknown = sorted(str(key) for key in data if key not in HEADER and key not in SECTIONS)
    if unknown:
        raise InstanceFormatError(f"{path}: unknown keys {unknown}; a triage holds {expected}, one file per release")
    implementation = data.get("implementation")
    if not isinstance(implementation, str) or not all(part.isidentifier() for part in implementation.split(".")):
        raise InstanceFormatError(
            f"{path}: 'implementation' must name the module under test by its dotted path "
            "(e.g. implementation: csconform.adapters.cstorch)"
        )
    if not _text(data.get("package")):
        raise InstanceFormatError(
            f"{path}: 'package' must name the distribution the verdicts are about (e.g. package: cerebras-pytorch)"
        )
    version = _version(data.get("version"), path)
    for section in SECTIONS:
        if not isinstance(data.get(section, []), list):
            raise InstanceFormatError(f"{path}: '{section}' must be a list of entries (write [] for none)")
    rules = tuple(_rule_entry(raw, f"{path}: rules entry {i + 1}") for i, raw in enumerate(data.get("rules", [])))
    classes = tuple(
        _class_entry(raw, f"{path}: differential entry {i + 1}") for i, raw in enumerate(data.get("differential", []))
    )
    _refuse_repeats(path, "rules", [(i, n, e.verdict) for n, e in enumerate(rules, start=1) for i in e.ids])
    _refuse_repeats(path, "differential", [(str(e.signature), n, e.verdict) for n, e in enumerate(classes, start=1)])
    return Triage(path, implementation, data["package"].strip(), version, rules, classes)


# --- which triage applies -----------------------------------------------------------------------------


def check_applies(triage: Triage, implementation: str) -> str:
    """The installed version of the triage's package; refuse a triage written for another
    implementation module or for another release."""
    if implementation != triage.implementation:
        raise TriageMismatchError(
            f"{triage.path} holds the verdicts for {triage.implementation}, not for {implementation}: pass the "
            "triage of the implementation under test"
        )
    try:
        installed = metadata.version(triage.package)
    except metadata.PackageNotFoundError:
        raise TriageMismatchError(
            f"{triage.path} holds the verdicts for {triage.release}, which is not installed"
        ) from None
    if installed != triage.version:
        raise TriageMismatchError(
            f"{triage.path} holds the verdicts for {triage.release}, but {triage.package} {installed} is installed: "
            "a release gets its own triage, none is inherited. Run without the triage, triage what differs in a copy "
            f'of this file with version: "{installed}", and pass that one'
        )
    return installed


def triage_for(implementation: str, package_folder: Path | None, path: Path | None = None) -> Triage | None:
    """The triage to judge ``implementation`` (a package in ``package_folder``; None: a plain module) by:
    the file at ``path``, refused unless it applies, else the file in the ``triage/`` folder of the
    package that applies to the release installed; None when there is no such folder or no file in it
    applies."""
    if path is not None:
        triage = load_triage(path)
        check_applies(triage, implementation)
        return triage
    if package_folder is None:
        return None
    applying = []
    for candidate in sorted((package_folder / FOLDER).glob("*.yaml")):
        triage = load_triage(candidate)
        try:
            check_applies(triage, implementation)
        except TriageMismatchError:
            continue
        applying.append(triage)
    if len(applying) > 1:
        first, second = (str(triage.path) for triage in applying[:2])
        raise ConflictingTriageError(
            f"{first} and {second} both hold the verdicts for {applying[0].release}: one file per release",
            key=applying[0].release,
            places=(first, second),
        )
    return applying[0] if applying else None


def read_expected_failures(path: Path, implementation: str) -> Expectations:
    """The ids ``implementation`` is expected to fail (and, from a triage, those it cannot show), and the
    release they hold for: a triage file's (``.yaml``/``.yml``, refused unless it applies), or a plain
    text list of ids to fail, one per line, ``#`` starting a comment (no release: "")."""
    path = Path(path)
    if path.suffix in (".yaml", ".yml"):
        triage = load_triage(path)
        installed = check_applies(triage, implementation)
        return Expectations(triage.expected_failures(), triage.unobservable(), f"{triage.package} {installed}")
    lines: dict[str, int] = {}
    for number, line in enumerate(read_text(path, what="list of expected failures").splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        if any(character.isspace() for character in entry) or not entry.isprintable():
            raise InstanceFormatError(f"{path}:{number}: expected one rule or test id per line, got {entry[:60]!r}")
        if entry in lines:  # one id, one entry, as in a triage file
            places = (f"line {lines[entry]}", f"line {number}")
            raise ConflictingTriageError(
                f"{path}: {places[0]} and {places[1]} both name {entry}: one id, one entry", key=entry, places=places
            )
        lines[entry] = number
    return Expectations(list(lines), [], "")
