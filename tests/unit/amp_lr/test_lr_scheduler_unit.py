"""Unit tests of csconform.engine.optim.lr_scheduler beyond the conformance rules: edge cases of the
step validation and of the piecewise bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.engine.optim import lr_scheduler as lr
from csconform.errors import InvalidInputError


def test_empty_and_multidimensional_step_arrays():
    schedule = lr.StepLR(initial_learning_rate=1.0, step_size=2, gamma=0.5)
    empty = schedule(np.array([], dtype=np.int64))
    assert empty.shape == (0,) and empty.dtype == np.float32
    grid = schedule(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert grid.tolist() == [[1.0, 1.0, 0.5], [0.5, 0.25, 0.25]]


def test_unsigned_steps_beyond_int64_are_refused():
    with pytest.raises(InvalidInputError, match="int64"):
        lr.ConstantLR(learning_rate=1.0)(np.array([2**63], dtype=np.uint64))


def test_float_results_are_rounded_once_to_float32():
    rate = 0.1  # not representable: float32(0.1) != 0.1
    assert lr.ConstantLR(learning_rate=rate)(3) == np.float32(rate)
    assert lr.ConstantLR(learning_rate=rate)(np.array([3]))[0] == np.float32(rate)


def test_cycle_must_be_a_bool():
    with pytest.raises(InvalidInputError, match="cycle"):
        lr.PolynomialLR(initial_learning_rate=1.0, end_learning_rate=0.0, total_iters=3, cycle="yes")


def test_sequential_lr_phases_with_nested_sequences():
    inner = lr.SequentialLR(
        schedulers=[lr.ConstantLR(learning_rate=1.0), lr.ConstantLR(learning_rate=2.0)], milestones=[3]
    )
    outer = lr.SequentialLR(schedulers=[inner, lr.ConstantLR(learning_rate=5.0)], milestones=[10])
    rates = outer(np.arange(12))
    assert rates.tolist() == [1.0] * 3 + [2.0] * 7 + [5.0] * 2


def test_piecewise_constant_accepts_numpy_sequences():
    schedule = lr.PiecewiseConstantLR(learning_rates=np.array([3.0, 2.0]), milestones=np.array([4]))
    assert schedule(np.array([0, 3, 4, 9])).tolist() == [3.0, 3.0, 2.0, 2.0]


def test_one_cycle_phase_ends_need_not_be_integers():
    schedule = lr.OneCycleLR(
        initial_learning_rate=0.1, max_lr=1.0, total_steps=10, pct_start=0.25, anneal_strategy="linear"
    )
    # warm-up ends at 0.25 * 10 - 1 = 1.5: t = 1 is two thirds of the way up, t = 2 already annealing.
    assert float(schedule(1)) == pytest.approx(0.1 + 0.9 * 2 / 3)
    assert float(schedule(2)) < 1.0
    assert float(schedule(9)) == pytest.approx(0.1 / 1e4)


def test_error_messages_name_the_argument():
    with pytest.raises(InvalidInputError, match="total_iters"):
        lr.CosineDecayLR(initial_learning_rate=1.0, end_learning_rate=0.0, total_iters=0)
    with pytest.raises(InvalidInputError, match=r"milestones\[1\]"):
        lr.MultiStepLR(initial_learning_rate=1.0, gamma=0.5, milestones=[3, "x"])
    with pytest.raises(InvalidInputError, match="decay_rate"):
        lr.ExponentialLR(initial_learning_rate=1.0, total_iters=3, decay_rate=-1.0)
