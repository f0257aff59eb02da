"""Findings: a rule a config breaks (or comes close to), where, and how binding.

Checks report through :class:`Findings`, which knows the spec and the release being judged: a
finding for a rule whose ``releases`` range leaves out that release is dropped, so a check need not
repeat the range. A refusal of a documented or public rule is a violation; a refusal of a reference
rule (our own choice) and every advisory finding is a warning. The message is the rule's documented
message (filled with the values) where the rule has one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from csconform.spec.model import Spec
from csconform.spec.releases import Release, holds_for
from csconform.userconfig.description import Origin

BINDING_LEVELS = ("documented", "public")


@dataclass(frozen=True)
class Finding:
    rule: str
    level: str
    path: str
    line: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Findings:
    """The findings of one file, split into violations and warnings."""

    spec: Spec
    release: Release
    violations: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    def in_force(self, rule_id: str) -> bool:
        return holds_for(self.spec.get(rule_id).releases, self.release)

    def _finding(self, rule_id: str, at: Origin, text: str | None, values: dict[str, Any]) -> Finding:
        rule = self.spec.get(rule_id)
        if rule.error is not None and rule.error.message and text is None:
            text = rule.error.message.format(**values)
        return Finding(rule.id, rule.level, at.path, at.line, text or rule.title)

    def refuse(self, rule_id: str, at: Origin, text: str | None = None, **values: Any) -> None:
        """The release refuses this: a violation (a warning when the rule is a reference choice)."""
        if not self.in_force(rule_id):
            return
        finding = self._finding(rule_id, at, text, values)
        (self.violations if finding.level in BINDING_LEVELS else self.warnings).append(finding)

    def warn(self, rule_id: str, at: Origin, text: str | None = None, **values: Any) -> None:
        """Accepted, but probably not what was meant: a warning."""
        if self.in_force(rule_id):
            self.warnings.append(self._finding(rule_id, at, text, values))
