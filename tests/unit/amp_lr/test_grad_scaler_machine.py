"""The shipped GradScaler state machine and its reference model catch broken scalers.

Each mutant below breaks one documented behaviour of the reference engine's GradScaler; the
machine, run with a modest budget and no shrinking, must fail against every one of them and pass
against the real engine (the conformance suite runs that case).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import csconform.engine as reference_engine
from csconform.engine import amp
from csconform.testing.grad_scaler import LossScaleModel, bitwise_equal, make_grad_scaler_machine


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
    return module


BUDGET = settings(
    max_examples=200, stateful_step_count=40, phases=[Phase.generate], derandomize=True, database=None, deadline=None
)


@pytest.mark.parametrize(
    "mutant",
    [GrowsOneStepEarly, NeverSkips, NoLowerClamp, MissesNaN, ForgetsCountersOnLoad, AllowsStepTwice, IgnoresTolerance],
    ids=lambda cls: cls.__name__,
)
def test_machine_catches_a_broken_scaler(mutant):
    with np.errstate(all="ignore"), pytest.raises(Exception):  # noqa: B017 - any detected failure counts
        run_state_machine_as_test(make_grad_scaler_machine(engine_with(mutant)), settings=BUDGET)


def test_machine_passes_the_reference_engine():
    run_state_machine_as_test(make_grad_scaler_machine(reference_engine), settings=BUDGET)


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


def test_model_tolerance_clamp_and_unrecoverable_flag():
    model = LossScaleModel(dynamic=True, scale=2.0, min_scale=1.0, max_scale=2.0, overflow_tolerance=0.5)
    assert model.update(True) is False
    assert model.update(False) is False and model.scale == 2.0  # 1/2 is not > 0.5
    assert model.update(False) is False and model.scale == 1.0  # 2/3 > 0.5
    assert model.update(False) is True and model.scale == 1.0  # overflow while already at the minimum
    static = LossScaleModel(dynamic=False, scale=4.0)
    assert static.update(False) is False and static.state() == {"loss_scale": 4.0}


def test_model_reports_overflow_at_the_minimum():
    model = LossScaleModel(dynamic=True, scale=1.0, min_scale=1.0, max_scale=4.0)
    assert model.update(False) is True
    assert model.update(True) is False


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
