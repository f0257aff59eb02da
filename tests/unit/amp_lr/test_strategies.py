"""The shipped hypothesis strategies produce what they promise."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from csconform.engine import amp
from csconform.testing import strategies


@given(grad=strategies.gradients_with_nonfinite((3, 2)))
def test_injected_gradients_are_never_all_finite(grad):
    assert grad.dtype == np.float32 and grad.shape == (3, 2)
    assert not np.all(np.isfinite(grad))


@given(grad=strategies.finite_gradients((5,), max_magnitude=2.0))
def test_finite_gradients_are_bounded(grad):
    assert np.all(np.isfinite(grad)) and np.all(np.abs(grad) <= 2.0)


@given(config=strategies.dynamic_grad_scaler_configs())
def test_dynamic_configs_are_ordered_and_accepted(config):
    assert 2.0**-14 <= config["min_loss_scale"] <= config["init_scale"] <= config["max_loss_scale"]
    assert amp.GradScaler(**config).get_scale() == config["init_scale"]


@given(config=strategies.static_grad_scaler_configs())
def test_static_configs_build_static_scalers(config):
    assert set(amp.GradScaler(**config).state_dict()) == {"loss_scale"}


@given(steps=strategies.global_step_arrays(max_step=100))
def test_step_arrays_are_non_negative_int64(steps):
    assert steps.dtype == np.int64 and (steps.size == 0 or steps.min() >= 0)
