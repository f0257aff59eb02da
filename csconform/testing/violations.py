"""A failed check that names the rules it found broken, so the matrix can blame exactly those.

A test marked with several rules (the GradScaler state machine touches fourteen) would otherwise
fail all of them when one invariant breaks, and a reader of the conformance matrix could not tell
which behaviour is wrong. A check raises :class:`RuleViolation` (an ``AssertionError``, so pytest
and Hypothesis treat it as any failed assertion) naming the rule ids whose statement it found
broken; the pytest plugin then counts the test as failed for those rules only. A failure that names
no rule (a plain ``assert``, an unexpected exception) still fails every rule the test is marked with.

This module has no dependencies, so the plugin can import it without loading Hypothesis or NumPy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RuleViolation", "expect", "violated_rules", "violation_of"]


class RuleViolation(AssertionError):
    """A check found the implementation breaking ``rule_ids``."""

    def __init__(self, rule_ids: str | tuple[str, ...], message: str) -> None:
        self.rule_ids: tuple[str, ...] = (rule_ids,) if isinstance(rule_ids, str) else tuple(rule_ids)
        if not self.rule_ids:
            raise ValueError("a RuleViolation names at least one rule")
        self.message = message
        super().__init__(f"[{', '.join(self.rule_ids)}] {message}")

    def __reduce__(self) -> tuple[type[RuleViolation], tuple[tuple[str, ...], str]]:
        return type(self), (self.rule_ids, self.message)


def expect(condition: object, rule_ids: str | tuple[str, ...], message: str) -> None:
    """Raise :class:`RuleViolation` for ``rule_ids`` unless ``condition`` holds."""
    if not condition:
        raise RuleViolation(rule_ids, message)


@contextmanager
def violation_of(*rule_ids: str) -> Iterator[None]:
    """Turn a failed assertion inside the block (``np.testing`` too) into a violation of ``rule_ids``."""
    try:
        yield
    except RuleViolation:
        raise
    except AssertionError as failure:
        raise RuleViolation(rule_ids, str(failure).strip() or type(failure).__name__) from failure


def violated_rules(failure: BaseException) -> frozenset[str] | None:
    """The rules a failure names, or None when some part of it names none (then nothing can be blamed).

    Exception groups (Hypothesis reports several distinct failures as one) name the union of their
    members' rules, and only if every member names some.
    """
    if isinstance(failure, RuleViolation):
        return frozenset(failure.rule_ids)
    if isinstance(failure, BaseExceptionGroup):
        named: set[str] = set()
        for member in failure.exceptions:
            rules = violated_rules(member)
            if rules is None:
                return None
            named |= rules
        return frozenset(named)
    return None
