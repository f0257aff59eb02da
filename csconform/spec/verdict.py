"""From rule outcomes to a verdict: conformance is judged per level, on the binding levels.

*documented* rules (the seed documents state them) and *public* rules (the vendor's public source or
docs decide where the seeds are silent) bind an implementation; *reference* rules are our engine's
own choices and only inform. A rule that could not be exercised (pending, unsupported, not run)
is not applicable and does not count either way.
"""

from __future__ import annotations

from collections import Counter

from csconform.spec.model import LEVELS, Spec

BINDING_LEVELS = ("documented", "public")
"""Conformance is judged on these levels; ``reference`` rules (our engine's own choices) inform."""


def levels_summary(spec: Spec, rules: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Outcome counts per level, and whether every applicable rule of the level passed.

    A rule is applicable when it was exercised: not pending, not unsupported, not left out of the
    run. An implementation conforms when every applicable documented and public rule passes.
    """
    summary: dict[str, dict[str, object]] = {}
    for level in LEVELS:
        outcomes = Counter(str(rules[rule.id]["outcome"]) for rule in spec.by_level(level) if rule.id in rules)
        applicable = sum(n for outcome, n in outcomes.items() if outcome in ("passed", "failed", "xfailed"))
        summary[level] = {
            "outcomes": dict(sorted(outcomes.items())),
            "applicable": applicable,
            "passed": outcomes["passed"],
            "all_applicable_pass": applicable == outcomes["passed"],
        }
    return summary


def conforms(levels: dict[str, dict[str, object]]) -> bool:
    """True when every applicable documented and public rule passed."""
    return all(bool(levels[level]["all_applicable_pass"]) for level in BINDING_LEVELS)
