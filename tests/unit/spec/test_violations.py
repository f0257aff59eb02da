"""RuleViolation: a failed check that names the rules it found broken."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from csconform.testing.violations import RuleViolation, expect, violated_rules, violation_of


def test_a_violation_is_an_assertion_that_names_its_rules():
    violation = RuleViolation(("GRADSCALER-012", "GRADSCALER-019"), "wrong gradients")
    assert isinstance(violation, AssertionError)
    assert str(violation) == "[GRADSCALER-012, GRADSCALER-019] wrong gradients"
    assert violated_rules(violation) == {"GRADSCALER-012", "GRADSCALER-019"}
    restored = pickle.loads(pickle.dumps(violation))
    assert restored.rule_ids == violation.rule_ids and str(restored) == str(violation)
    assert copy.copy(violation).rule_ids == violation.rule_ids
    with pytest.raises(ValueError):
        RuleViolation((), "names nothing")


def test_expect_raises_only_when_the_condition_fails():
    expect(True, "GRADSCALER-014", "fine")
    with pytest.raises(RuleViolation) as caught:
        expect(False, "GRADSCALER-014", "skipped")
    assert caught.value.rule_ids == ("GRADSCALER-014",) and caught.value.message == "skipped"


def test_violation_of_turns_failed_assertions_into_violations():
    with pytest.raises(RuleViolation) as caught, violation_of("GRADSCALER-012"):
        np.testing.assert_array_equal(np.ones(2), np.zeros(2))
    assert caught.value.rule_ids == ("GRADSCALER-012",)
    assert isinstance(caught.value.__cause__, AssertionError)
    with pytest.raises(RuleViolation) as caught, violation_of("GRADSCALER-012"):
        raise RuleViolation("GRADSCALER-019", "already named")
    assert caught.value.rule_ids == ("GRADSCALER-019",)
    with pytest.raises(KeyError), violation_of("GRADSCALER-012"):
        raise KeyError("not an assertion: not blamed on the rule")


def test_a_group_names_its_members_rules_only_when_every_member_names_some():
    both = ExceptionGroup("two", [RuleViolation("A-001", "a"), RuleViolation("B-002", "b")])
    assert violated_rules(both) == {"A-001", "B-002"}
    nested = ExceptionGroup("nested", [both, RuleViolation("A-001", "again")])
    assert violated_rules(nested) == {"A-001", "B-002"}
    assert violated_rules(ExceptionGroup("mixed", [RuleViolation("A-001", "a"), ValueError("x")])) is None
    assert violated_rules(AssertionError("plain")) is None
