"""Another suite can subclass the shipped GradScaler state machine: add a rule, keep every check.

``StepIfFiniteMachine`` adds a rule the shipped machine never exercises: ``step_if_finite`` before
the gradients were unscaled and checked must be refused (GRADSCALER-038). Bound to the reference
engine in a subclass, its ``TestCase`` passes; it fails an engine that breaks only its own rule,
which the shipped machine lets through; and against the meta tests' broken engines (each in a
process of its own: they patch the reference engine when imported) it still fails on exactly the
rule each of them breaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import precondition, rule, run_state_machine_as_test

import csconform
import csconform.engine as reference_engine
from csconform.engine import amp
from csconform.testing.grad_scaler import GradScalerMachine
from csconform.testing.violations import RuleViolation, violated_rules

ROOT = Path(csconform.__file__).resolve().parents[1]
BUDGET = settings(
    max_examples=200, stateful_step_count=40, phases=[Phase.generate], derandomize=True, database=None, deadline=None
)
PASSING_BUDGET = settings(BUDGET, max_examples=50)  # a run that must pass explores all of its budget


class StepIfFiniteMachine(GradScalerMachine):
    """The shipped machine, and step_if_finite called too early."""

    @precondition(lambda self: self.phase == "grads")
    @rule()
    def step_if_finite_before_unscale(self) -> None:
        self.expect_refused(
            "GRADSCALER-038",
            "step_if_finite() before unscale_()",
            lambda: self.scaler.step_if_finite(self.optimizer),
        )


class ReferenceStepIfFiniteMachine(StepIfFiniteMachine):
    engine = reference_engine


TestReferenceStepIfFinite = ReferenceStepIfFiniteMachine.TestCase
TestReferenceStepIfFinite.settings = PASSING_BUDGET


class StepsBeforeTheCheck(amp.GradScaler):
    """step_if_finite takes gradients nobody checked for finite (breaks GRADSCALER-038 only)."""

    def step_if_finite(self, optimizer, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._finite.setdefault(id(optimizer), True)
        return super().step_if_finite(optimizer, *args, **kwargs)


def _steps_before_the_check() -> types.ModuleType:
    module = types.ModuleType("steps_before_the_check")
    module.nn = reference_engine.nn
    module.optim = reference_engine.optim
    module.amp = types.SimpleNamespace(GradScaler=StepsBeforeTheCheck)
    module.reset = reference_engine.reset
    return module


def test_the_added_rule_catches_what_the_shipped_machine_lets_through() -> None:
    engine = _steps_before_the_check()
    run_state_machine_as_test(GradScalerMachine.for_engine(engine), settings=PASSING_BUDGET)
    with np.errstate(all="ignore"), pytest.raises(RuleViolation) as caught:
        run_state_machine_as_test(StepIfFiniteMachine.for_engine(engine), settings=BUDGET)
    assert violated_rules(caught.value) == {"GRADSCALER-038"}, str(caught.value)


_RUN_AGAINST_A_BROKEN_ENGINE = """
import importlib, json, sys
import numpy as np
from hypothesis.stateful import run_state_machine_as_test
from csconform.testing.violations import RuleViolation, violated_rules

broken = importlib.import_module(sys.argv[1])  # patches the reference engine: this process only
from tests.meta.test_grad_scaler_machine_subclass import BUDGET, StepIfFiniteMachine

try:
    with np.errstate(all="ignore"):
        run_state_machine_as_test(StepIfFiniteMachine.for_engine(broken), settings=BUDGET)
except RuleViolation as violation:
    print(json.dumps(sorted(violated_rules(violation))))
else:
    print(json.dumps([]))
"""


@pytest.mark.parametrize(
    "broken, rules",
    [
        ("accepts_second_unscale", ["GRADSCALER-036"]),
        ("gives_up_at_minimum_scale", ["GRADSCALER-043"]),
        ("static_scaling_skips_overflows", ["GRADSCALER-014"]),
    ],
)
def test_the_subclass_keeps_failing_the_broken_engines(broken: str, rules: list[str]) -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", _RUN_AGAINST_A_BROKEN_ENGINE, f"tests.meta.broken_engines.{broken}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == rules, result.stdout
