"""Collecting the findings about one file, judged by the spec for one release.

A check says which rule it found broken and where; :class:`Findings` turns that into a
:class:`~csconform.findings.finding.Finding` the spec's way: a rule whose ``releases`` range leaves
out the release judged is dropped (so a check need not repeat the range); a refusal of a documented
or public rule is a violation, of a reference rule (our own choice) a warning, and every advisory
finding is a warning; the message is the rule's documented message (filled with the values) where
it has one, and the fix is the rule's own unless the check knows a better one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from csconform.findings.finding import Edit, Finding, Location, Severity
from csconform.spec.model import Spec
from csconform.spec.releases import Release, holds_for

BINDING_LEVELS = ("documented", "public")


@dataclass
class Findings:
    """The findings about the file ``path``, split into violations and warnings."""

    spec: Spec
    release: Release
    path: str
    violations: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    def in_force(self, rule_id: str) -> bool:
        return holds_for(self.spec.get(rule_id).releases, self.release)

    def refuse(self, rule_id: str, at: Location, message: str | None = None, **details: Any) -> None:
        """The release refuses this: a violation (a warning when the rule is a reference choice).
        ``details``: ``fix`` (instead of the rule's), ``edits`` or ``new_value`` (a mechanical fix), and
        the values the rule's documented message names."""
        self._add(rule_id, at, message, advisory=False, **details)

    def warn(self, rule_id: str, at: Location, message: str | None = None, **details: Any) -> None:
        """Accepted, but probably not what was meant: a warning (``details`` as for :meth:`refuse`)."""
        self._add(rule_id, at, message, advisory=True, **details)

    def _add(
        self,
        rule_id: str,
        at: Location,
        message: str | None,
        advisory: bool,
        fix: str | None = None,
        edits: tuple[Edit, ...] = (),
        new_value: str | None = None,
        **values: Any,
    ) -> None:
        if not self.in_force(rule_id):
            return
        rule = self.spec.get(rule_id)
        severity: Severity = "warning" if advisory or rule.level not in BINDING_LEVELS else "violation"
        if message is None and rule.error is not None and rule.error.message:
            message = rule.error.message.format(**values)
        finding = Finding(
            rule=rule.id,
            level=rule.level,
            severity=severity,
            path=self.path,
            message=message or rule.title,
            line=at.line,
            column=at.column,
            key=at.key,
            fix=fix or rule.fix,
            edits=edits,
            new_value=new_value,
        )
        (self.violations if severity == "violation" else self.warnings).append(finding)
