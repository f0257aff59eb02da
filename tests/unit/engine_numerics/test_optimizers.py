"""Optimizer internals: atomic steps, param-group guards, state-dict validation."""

from __future__ import annotations

import numpy as np
import pytest

from csconform import engine
from csconform.engine import nn, optim
from csconform.errors import InvalidInputError, LRSchedulerError


@pytest.fixture(autouse=True)
def fresh_engine():
    engine.reset()
    yield
    engine.reset()


def params_with_grads(count: int = 2) -> list[nn.Parameter]:
    params = [nn.Parameter(np.full((3,), float(i + 1))) for i in range(count)]
    for p in params:
        p.grad = np.ones(3, np.float32)
    return params


def test_a_failing_step_changes_nothing():
    params = params_with_grads()

    def broken(step: int) -> np.float32:
        raise RuntimeError("schedule failed")

    optimizer = optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": broken}], lr=0.1, momentum=0.9)
    before = [p.data.copy() for p in params]
    with pytest.raises(RuntimeError):
        optimizer.step()
    assert all(np.array_equal(p.data, b) for p, b in zip(params, before, strict=True))
    assert optimizer.global_step == 0 and optimizer.state == {}


def test_param_groups_guard_lr_and_deletion():
    optimizer = optim.SGD(params_with_grads(), lr=0.1)
    group = optimizer.param_groups[0]
    group["lr"] = lambda step: np.float32(0.5)  # a schedule of the global step is fine on cs
    assert optimizer.current_lrs() == [np.float32(0.5)]
    with pytest.raises(LRSchedulerError):
        group["lr"] = 0.3
    with pytest.raises(LRSchedulerError):
        group.update({"lr": 0.3})
    with pytest.raises(InvalidInputError):
        del group["lr"]
    engine.set_target("cpu")
    with pytest.raises(InvalidInputError):
        group["lr"] = -1.0


def test_unknown_group_keys_are_refused():
    with pytest.raises(InvalidInputError, match="unknown hyperparameters"):
        optim.SGD([{"params": params_with_grads(), "betas": (0.9, 0.99)}], lr=0.1)
    with pytest.raises(InvalidInputError):
        optim.SGD([{"lr": 0.1}], lr=0.1)


def test_zero_grad_clears_every_group():
    params = params_with_grads(3)
    optimizer = optim.Adam([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    optimizer.zero_grad()
    assert all(p.grad is None for p in params)


def test_state_dict_is_a_copy_and_load_validates():
    params = params_with_grads()
    optimizer = optim.Adam(params, lr=0.1)
    optimizer.step()
    saved = optimizer.state_dict()
    saved["state"][0]["exp_avg"][...] = 99.0
    assert not np.any(optimizer.state[0]["exp_avg"] == 99.0)

    fresh = optim.Adam(params_with_grads(), lr=0.1)
    with pytest.raises(InvalidInputError):
        fresh.load_state_dict({"state": {}})
    with pytest.raises(InvalidInputError):
        fresh.load_state_dict({**optimizer.state_dict(), "global_step": -1})
    bad_shape = optimizer.state_dict()
    bad_shape["state"][0]["exp_avg"] = np.zeros(5, np.float32)
    with pytest.raises(InvalidInputError):
        fresh.load_state_dict(bad_shape)
    with pytest.raises(InvalidInputError):
        optim.Adam(params_with_grads(3), lr=0.1).load_state_dict(optimizer.state_dict())


def test_lr_numbers_are_wrapped_as_constant_schedules():
    optimizer = optim.SGD(params_with_grads(), lr=0.25)
    assert isinstance(optimizer.param_groups[0]["lr"], optim.lr_scheduler.ConstantLR)


def test_adam_state_stays_float32():
    params = params_with_grads()
    optimizer = optim.AdamW(params, lr=0.01)
    optimizer.step()
    for entries in optimizer.state.values():
        assert entries["exp_avg"].dtype == np.float32 and entries["exp_avg_sq"].dtype == np.float32
    assert all(p.data.dtype == np.float32 for p in params)


@pytest.mark.parametrize("bad", [np.float32(np.nan), np.float32(-0.1), np.float32(np.inf)])
def test_a_schedule_giving_a_bad_rate_is_refused_before_any_update(bad):
    params = params_with_grads()
    before = [p.data.copy() for p in params]
    optimizer = optim.SGD(params, lr=lambda step: np.float32(0.1) if step == 0 else bad)
    optimizer.step()
    after_first = [p.data.copy() for p in params]
    with pytest.raises(InvalidInputError, match="global step 1"):
        optimizer.step()
    assert all(np.array_equal(p.data, a) for p, a in zip(params, after_first, strict=True))
    assert optimizer.global_step == 1 and not np.array_equal(after_first[0], before[0])
