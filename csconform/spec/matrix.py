"""The conformance matrix: every test's outcome, folded into one outcome per rule.

The pytest plugin hands every test report to :meth:`Matrix.record`; :meth:`Matrix.rules` folds them.

A test's outcome over its phases (setup, call, teardown) is the worst of them, in the order of
:data:`OUTCOME_ORDER`: ``failed`` (any phase failed, including an unexpected pass of a strict
expectation), ``xfailed`` (an expected failure failed), ``unsupported`` (the implementation cannot
exercise the check), ``skipped``, ``passed`` (the call passed; a non-strict expected failure that
passes is a pass).

A rule's outcome is the worst outcome among its tests, in the same order; a rule passes only when
every one of its tests passed. A failed test whose failure named some of its rules (a
:class:`~csconform.testing.violations.RuleViolation`) fails those rules only; for its other rules it
is ``inconclusive``: counted, but not towards their outcome. A rule none of whose tests gave a
conclusive outcome (not run, deselected, or inconclusive only) is ``skipped``; a ``pending`` rule has
no tests yet. Which outcomes are applicable to a level's verdict is :mod:`csconform.spec.verdict`'s.

This module does not import pytest: it reads only a report's attributes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from csconform.spec.model import Spec
from csconform.spec.verdict import levels_summary

if TYPE_CHECKING:
    import pytest

# user properties the plugin attaches to an item or a report
RULES_PROPERTY = "csconform_rules"
UNSUPPORTED_PROPERTY = "csconform_unsupported"
EMULATED_PROPERTY = "csconform_emulated"
VIOLATED_PROPERTY = "csconform_violated_rules"

INCONCLUSIVE = "inconclusive"
OUTCOME_ORDER = ("failed", "xfailed", "unsupported", "skipped", "passed")
"""Test and rule outcomes, worst first: the first one present decides."""


def phase_outcome(report: pytest.TestReport) -> str | None:
    """What one phase's report says about its test, or None when it says nothing (a setup or a
    teardown that passed)."""
    if report.failed:
        return "failed"  # also a strict expected failure that passed: pytest reports it failed
    if UNSUPPORTED_PROPERTY in dict(report.user_properties):
        return "unsupported"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "passed"  # a non-strict expected failure that passed
    if report.skipped:
        return "skipped"
    if report.when == "call":
        return "passed"
    return None


@dataclass
class Matrix:
    """Outcome of every test, folded into an outcome per rule."""

    spec: Spec
    engine_name: str
    declaration: dict[str, object] = field(default_factory=dict)
    # what the matrix describes: the csconform version and the spec's sha256 (see csconform.spec.spec_digest)
    stamp: dict[str, str] = field(default_factory=dict)
    test_rules: dict[str, list[str]] = field(default_factory=dict)
    test_outcomes: dict[str, str] = field(default_factory=dict)
    test_reasons: dict[str, str] = field(default_factory=dict)
    test_emulated: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # a failed test whose every failure named some of its rules: those rules (the others are
    # inconclusive). None: some failure of the test named no rule, so it fails all of them.
    test_violations: dict[str, set[str] | None] = field(default_factory=dict)

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase's report of a test marked with rules (other tests are not in the matrix)."""
        properties = dict(report.user_properties)
        rules = properties.get(RULES_PROPERTY)
        if not isinstance(rules, tuple) or not rules:
            return
        nodeid = report.nodeid
        self.test_rules[nodeid] = [str(rule_id) for rule_id in rules]
        emulated = properties.get(EMULATED_PROPERTY)
        if isinstance(emulated, tuple):
            self.test_emulated[nodeid].update(str(name) for name in emulated)
        if report.failed:
            self._blame(nodeid, properties.get(VIOLATED_PROPERTY), rules)
        outcome = phase_outcome(report)
        if outcome is None:
            return
        if outcome == "unsupported":
            self.test_reasons[nodeid] = str(properties[UNSUPPORTED_PROPERTY])
        previous = self.test_outcomes.get(nodeid, outcome)
        self.test_outcomes[nodeid] = min(outcome, previous, key=OUTCOME_ORDER.index)

    def _blame(self, nodeid: str, violated: object, rules: tuple[object, ...]) -> None:
        """A failed phase: the rules its failure named, joined with what earlier phases named."""
        named = {str(rule_id) for rule_id in violated} if isinstance(violated, tuple) else set()
        if not named or not named <= {str(rule_id) for rule_id in rules}:
            self.test_violations[nodeid] = None  # this failure blames no rule of the test: it fails them all
        elif nodeid not in self.test_violations:
            self.test_violations[nodeid] = named
        elif (earlier := self.test_violations[nodeid]) is not None:
            self.test_violations[nodeid] = earlier | named

    def rules(self) -> dict[str, dict[str, object]]:
        """Every rule in force: its outcome, how many tests named it, and the count of each outcome."""
        per_rule: dict[str, Counter[str]] = defaultdict(Counter)
        reasons: dict[str, set[str]] = defaultdict(set)
        emulated: dict[str, set[str]] = defaultdict(set)
        for nodeid, rules in self.test_rules.items():
            outcome = self.test_outcomes.get(nodeid)
            if outcome is None:
                continue
            violated = self.test_violations.get(nodeid)
            for rule_id in rules:
                if outcome == "failed" and violated is not None and rule_id not in violated:
                    per_rule[rule_id][INCONCLUSIVE] += 1
                    continue
                per_rule[rule_id][outcome] += 1
                if nodeid in self.test_reasons:
                    reasons[rule_id].add(self.test_reasons[nodeid])
                if outcome != "unsupported":
                    emulated[rule_id].update(self.test_emulated.get(nodeid, ()))
        matrix: dict[str, dict[str, object]] = {}
        for rule in self.spec.active():
            counts = per_rule.get(rule.id, Counter())
            if rule.status == "pending":
                outcome = "pending"
            else:
                # the worst outcome among its tests; none conclusive (not run, deselected): skipped
                outcome = next((o for o in OUTCOME_ORDER if counts[o]), "skipped")
            entry: dict[str, object] = {"outcome": outcome, "tests": sum(counts.values()), **dict(counts)}
            if reasons.get(rule.id):
                entry["unsupported_reasons"] = sorted(reasons[rule.id])
            if emulated.get(rule.id):
                entry["emulated"] = sorted(emulated[rule.id])
            matrix[rule.id] = entry
        return matrix

    def to_json(self) -> dict[str, object]:
        rules = self.rules()
        return {
            **self.stamp,
            "engine": self.engine_name,
            "implementation": self.declaration,
            "spec_rules": len(self.spec.active()),
            "levels": levels_summary(self.spec, rules),
            "rules": rules,
        }
