"""The shipped GradScaler state machine and its reference model catch broken scalers.

Each mutant below breaks one documented behaviour of the reference engine's GradScaler; the
machine, run with a modest budget and no shrinking, must fail against every one of them, naming
exactly the rule the mutant breaks, and pass against the real engine (the conformance suite runs
that case).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import csconform.engine as reference_engine
from csconform.engine import amp
from csconform.errors import InvalidInputError, NonRecoverableNaNError
from csconform.testing.grad_scaler import GradScalerMachine, LossScaleModel, bitwise_equal
from csconform.testing.violations import RuleViolation, violated_rules


class GrowsOneStepEarly(amp.GradScaler):
    def _apply_dls_rule(self, finite: bool) -> None:
        super()._apply_dls_rule(finite)
        if self._steps_since_rescale == self.steps_per_increase and self._steps_since_rescale > 0:  # >= not >
            self._loss_scale = min(2 * self._loss_scale, self.max_loss_scale)
            self._steps_since_rescale = self._overflows_since_rescale = 0


class NeverSkips(amp.GradScaler):
    def step_if_finite(self, optimizer, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._finite[id(optimizer)] = True
        return super().step_if_finite(optimizer, *args, **kwargs)


class NoLowerClamp(amp.GradScaler):
    def _apply_dls_rule(self, finite: bool) -> None:
        minimum, self.min_loss_scale = self.min_loss_scale, 0.0
        super()._apply_dls_rule(finite)
        self.min_loss_scale = minimum


class MissesNaN(amp.GradScaler):
    def clip_gradients_and_return_isfinite(self, optimizers):  # noqa: ANN001, ANN201
        super().clip_gradients_and_return_isfinite(optimizers)  # clips as documented
        params = amp._gradients(optimizers)
        return not any(np.isinf(p.grad).any() for p in params)


class ForgetsCountersOnLoad(amp.GradScaler):
    def load_state_dict(self, state_dict):  # noqa: ANN001, ANN201
        super().load_state_dict(
            {**state_dict, "steps_since_rescale": 0, "overflows_since_rescale": 0} if self.dynamic else state_dict
        )


class AllowsStepTwice(amp.GradScaler):
    def step(self, optimizer, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self._stepped.discard(id(optimizer))
        return super().step(optimizer, *args, **kwargs)


class GivesUpAtTheMinimum(amp.GradScaler):
    """The reference engine before public-facts#GradScaler was read right: update() raised at the minimum scale."""

    def update(self, new_scale=None):  # noqa: ANN001, ANN201
        overflow_at_minimum = self.is_at_minimum() and not all(self._finite.values())
        super().update(new_scale)
        if overflow_at_minimum:
            raise NonRecoverableNaNError("gradients are still non-finite at the minimum loss scale")


class IgnoresTolerance(amp.GradScaler):
    def _apply_dls_rule(self, finite: bool) -> None:
        tolerance, self.overflow_tolerance = self.overflow_tolerance, 0.0
        super()._apply_dls_rule(finite)
        self.overflow_tolerance = tolerance


def engine_with(scaler_class: type) -> types.ModuleType:
    module = types.ModuleType(f"mutant_{scaler_class.__name__}")
    module.nn = reference_engine.nn
    module.optim = reference_engine.optim
    module.amp = types.SimpleNamespace(GradScaler=scaler_class)
    module.reset = reference_engine.reset
    return module


BUDGET = settings(
    max_examples=200, stateful_step_count=40, phases=[Phase.generate], derandomize=True, database=None, deadline=None
)


MUTANTS = {
    # mutant: the rules the machine must blame, and only those
    GrowsOneStepEarly: {"GRADSCALER-021"},
    NeverSkips: {"GRADSCALER-013", "GRADSCALER-015"},  # the overflow is not even counted
    NoLowerClamp: {"GRADSCALER-022"},
    MissesNaN: {"GRADSCALER-013", "GRADSCALER-015"},
    ForgetsCountersOnLoad: {"GRADSCALER-023"},
    AllowsStepTwice: {"GRADSCALER-037"},
    IgnoresTolerance: {"GRADSCALER-020"},
    GivesUpAtTheMinimum: {"GRADSCALER-043"},
}


@pytest.mark.parametrize("mutant", list(MUTANTS), ids=lambda cls: cls.__name__)
def test_machine_catches_a_broken_scaler_and_names_its_rule(mutant):
    with np.errstate(all="ignore"), pytest.raises(RuleViolation) as caught:
        run_state_machine_as_test(GradScalerMachine.for_engine(engine_with(mutant)), settings=BUDGET)
    assert violated_rules(caught.value) == MUTANTS[mutant], str(caught.value)


def test_machine_passes_the_reference_engine():
    run_state_machine_as_test(GradScalerMachine.for_engine(reference_engine), settings=BUDGET)


def test_a_machine_bound_to_no_engine_is_refused_naming_it():
    class Unbound(GradScalerMachine):
        pass

    with pytest.raises(InvalidInputError, match="Unbound"):
        Unbound()


# --- the reference model on hand-computed sequences ----------------------------------------------------


def test_model_halves_on_overflow_and_grows_after_n_plus_one_clean_updates():
    model = LossScaleModel(dynamic=True, scale=8.0, min_scale=1.0, max_scale=64.0, steps_per_increase=2)
    scales = []
    for finite in [True, True, True, False, True, True, True, True]:
        model.step(finite)
        model.update(finite)
        scales.append(model.scale)
    assert scales == [8.0, 8.0, 16.0, 8.0, 8.0, 8.0, 16.0, 16.0]
    assert model.skipped == 1


def test_model_tolerance_and_clamp():
    model = LossScaleModel(dynamic=True, scale=2.0, min_scale=1.0, max_scale=2.0, overflow_tolerance=0.5)
    model.update(True)
    model.update(False)
    assert model.scale == 2.0  # 1/2 is not > 0.5
    model.update(False)
    assert model.scale == 1.0  # 2/3 > 0.5
    static = LossScaleModel(dynamic=False, scale=4.0)
    static.update(False)
    assert static.state() == {"loss_scale": 4.0}


def test_model_stays_clamped_at_the_minimum():
    """Overflows at the minimum are counted and backed off on, and the scale stays there (GRADSCALER-043)."""
    model = LossScaleModel(dynamic=True, scale=1.0, min_scale=1.0, max_scale=4.0)
    for _ in range(3):
        model.step(False)
        model.update(False)
    assert model.state() == {
        "loss_scale": 1.0,
        "steps_since_rescale": 0,
        "overflows_since_rescale": 0,
        "num_skipped_steps": 3,
    }


@pytest.mark.parametrize(
    "left, right, equal",
    [
        (np.array([np.nan], dtype=np.float32), np.array([np.nan], dtype=np.float32), True),
        (np.array([0.0], dtype=np.float32), np.array([-0.0], dtype=np.float32), False),
        (np.array([1.0], dtype=np.float32), np.array([1.0], dtype=np.float64), False),
        ({"a": [1, np.ones(2)]}, {"a": [1, np.ones(2)]}, True),
        ({"a": 1}, {"b": 1}, False),
        (1, 1.0, False),
    ],
)
def test_bitwise_equal(left, right, equal):
    assert bitwise_equal(left, right) is equal


def test_the_machine_blames_only_the_rules_it_declares():
    """The conformance test is marked with RULES; a violation naming any other rule could not be attributed."""
    import inspect
    import re

    from csconform.testing import grad_scaler

    named = set(re.findall(r"GRADSCALER-\d{3}", inspect.getsource(grad_scaler)))
    assert named == set(grad_scaler.RULES)
