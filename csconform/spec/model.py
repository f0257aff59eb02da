"""The rule model: one record per documented limitation or behaviour.

A ``Rule`` is plain data, loaded from ``specs/*.yaml``; a ``Spec`` is the whole collection with a
small query API. Tests refer to rules by id (``@pytest.mark.spec("GRADSCALER-004")``), reports
render them, and the traceability gate keeps ``status`` honest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from csconform.errors import SpecError

KINDS = ("limitation", "behaviour", "interface", "hardware", "performance")
TARGETS = ("cs", "cpu", "both")
MODES = ("pipelined", "weight_streaming", "any")
STATUSES = ("checked", "pending", "retired")
# How binding a rule is: the seed documents state it; the vendor's public source or docs decide
# what the seeds leave open (public-facts and the vendor's excerpts, docs/sources.md); or it is our
# reference engine's own choice. An implementation conforms when its documented and public rules
# pass; reference rules inform.
LEVELS = ("documented", "public", "reference")


@dataclass(frozen=True)
class Source:
    """Where a rule comes from: a registered document's id and a section of it (docs/sources.md)."""

    document: str
    section: str

    def __str__(self) -> str:
        return f"{self.document}#{self.section}"


@dataclass(frozen=True)
class Scope:
    target: str = "both"
    mode: str = "any"


@dataclass(frozen=True)
class ErrorSpec:
    """The refusal a rule demands: an exception type and, where documented, its exact message."""

    type: str
    message: str | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    statement: str
    sources: tuple[Source, ...]
    kind: str
    scope: Scope
    status: str
    level: str
    area: str
    file: str
    error: ErrorSpec | None = None
    reason: str | None = None
    notes: str | None = None
    releases: str | None = None
    """The releases the rule holds for, a version range (``">=1.8.0,<2.2.1"``); None: every release."""
    fix: str | None = None
    """How to comply, in a sentence (what a finding of ``validate`` or ``lint`` tells the user to do)."""

    @property
    def prefix(self) -> str:
        return self.id.rsplit("-", 1)[0]

    @property
    def source_text(self) -> str:
        return "; ".join(str(source) for source in self.sources)


@dataclass(frozen=True)
class Area:
    """One spec file: a documented area and its rules."""

    name: str
    title: str
    file: str
    rules: tuple[Rule, ...]


@dataclass
class Spec:
    """Every rule of every area, queryable by id, area, source document, status and level."""

    areas: tuple[Area, ...]
    _by_id: dict[str, Rule] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {rule.id: rule for area in self.areas for rule in area.rules}

    def __iter__(self) -> Iterator[Rule]:
        for area in self.areas:
            yield from area.rules

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self._by_id

    def get(self, rule_id: str) -> Rule:
        try:
            return self._by_id[rule_id]
        except KeyError:
            raise SpecError(f"unknown rule id {rule_id!r}") from None

    def by_area(self, area: str) -> list[Rule]:
        names = [a.name for a in self.areas]
        if area not in names:
            raise SpecError(f"unknown area {area!r}; known areas: {', '.join(names)}")
        return [rule for rule in self if rule.area == area]

    def by_status(self, status: str) -> list[Rule]:
        if status not in STATUSES:
            raise SpecError(f"unknown status {status!r}; known statuses: {', '.join(STATUSES)}")
        return [rule for rule in self if rule.status == status]

    def by_level(self, level: str) -> list[Rule]:
        if level not in LEVELS:
            raise SpecError(f"unknown level {level!r}; known levels: {', '.join(LEVELS)}")
        return [rule for rule in self if rule.level == level]

    def by_source(self, document: str, section: str | None = None) -> list[Rule]:
        """Rules citing a document (matched by its id or a prefix of it, e.g. ``amp``) and section."""
        return [
            rule
            for rule in self
            if any(s.document.startswith(document) and (section is None or s.section == section) for s in rule.sources)
        ]

    def active(self) -> list[Rule]:
        """Rules that are in force: checked or pending, not retired."""
        return [rule for rule in self if rule.status != "retired"]

    def counts(self) -> dict[str, int]:
        return {status: len(self.by_status(status)) for status in STATUSES}

    def level_counts(self) -> dict[str, int]:
        """Rules in force (not retired) per level."""
        return {level: sum(rule.level == level for rule in self.active()) for level in LEVELS}

    def select(self, ids: Iterable[str]) -> list[Rule]:
        return [self.get(rule_id) for rule_id in ids]
