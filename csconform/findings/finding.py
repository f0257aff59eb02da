"""A finding: one rule of the spec that a user's file breaks (or comes close to), and where.

``validate`` (params files, ``config.json``) and ``lint`` (training code) report the same thing the
same way, so that one renderer serves both and a CI reads both: the rule's id and level (how binding
the rule is), whether it is a violation or a warning, the file, the line and column, the key path
inside a config document, the message, and the fix in a sentence. A mechanical fix also carries the
:class:`Edit` that makes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["violation", "warning"]


@dataclass(frozen=True)
class Location:
    """Where something was written: a key path in a document (or a command-line option), a line and
    a column (1-based; None where unknown: an option has neither)."""

    key: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = self.key or ""
        if self.line:
            where += f" (line {self.line})" if where else f"line {self.line}"
        return where


@dataclass(frozen=True)
class Edit:
    """Replace the text from (``line``, ``column``) up to (``end_line``, ``end_column``) by ``text``
    (1-based lines and columns; the end is exclusive; an empty range inserts)."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class Finding:
    rule: str
    level: str
    """The rule's level: documented, public or reference."""
    severity: Severity
    path: str
    """The file."""
    message: str
    line: int | None = None
    column: int | None = None
    key: str | None = None
    """The key path inside a config document (None in code)."""
    fix: str | None = None
    edits: tuple[Edit, ...] = field(default=(), compare=False)
    new_value: str | None = field(default=None, compare=False)
    """A mechanical fix that gives the key on the finding's line this value (a check knows the value,
    not the text: the fixes turn it into an :class:`Edit` where the line holds the key once)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "key": self.key,
            "message": self.message,
            "fix": self.fix,
            "fixable": bool(self.edits),
        }


@dataclass
class FileReport:
    """Everything said about one file: its findings, or why it could not be read (``error``), and the
    command's own extra fields (validate's plan and schedule) for the JSON form."""

    path: str
    violations: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    error: str | None = None
    suppressed: int = 0
    """Findings silenced by an inline ``csconform: ignore[...]`` comment or the project's configuration."""

    @property
    def exit_code(self) -> int:
        """2: unreadable; 1: a violation; 0: conforms (warnings allowed)."""
        return 2 if self.error else 1 if self.violations else 0

    @property
    def outcome(self) -> str:
        return "unreadable" if self.error else "violations" if self.violations else "conforms"

    @property
    def findings(self) -> list[Finding]:
        return [*self.violations, *self.warnings]

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "outcome": self.outcome,
            "error": self.error,
            "violations": [f.as_dict() for f in self.violations],
            "warnings": [f.as_dict() for f in self.warnings],
            "suppressed": self.suppressed,
        }
