"""Unit tests of csconform.engine.amp internals: the float32 global norm, defaults, loss scaling of
plain numbers and Loss objects, and optimizer_step's clearing of old gradients."""

from __future__ import annotations

import math

import numpy as np

from csconform.engine import amp, context, nn, optim


class _Holder:
    def __init__(self, grad: np.ndarray) -> None:
        self.grad = grad


def test_global_norm_accumulates_in_float32():
    assert amp.global_grad_norm([]) == 0.0
    assert amp.global_grad_norm([_Holder(np.array([3.0, 4.0], dtype=np.float32))]) == 5.0
    assert amp.global_grad_norm([_Holder(np.array([3e19], dtype=np.float32))]) == math.inf
    assert math.isnan(amp.global_grad_norm([_Holder(np.array([1.0, np.nan], dtype=np.float32))]))
    # a float64 accumulation would give a finite norm here; float32 overflows
    spread = [_Holder(np.full(4, 1e19, dtype=np.float32)) for _ in range(2)]
    assert amp.global_grad_norm(spread) == math.inf


def test_default_max_loss_scale_follows_the_context():
    context.reset()
    assert amp.default_max_loss_scale() == 2.0**15
    context.set_half_dtype_name("cbfloat16")
    assert amp.default_max_loss_scale() == 2.0**31
    context.reset()


def test_scale_of_numbers_and_of_loss_objects():
    scaler = amp.GradScaler(loss_scale=8.0)
    assert scaler.scale(1.5) == np.float32(12.0) and isinstance(scaler.scale(1.5), np.float32)
    nn.manual_seed(0)
    model = nn.Linear(2, 1)
    loss = nn.mse_loss(model(np.ones((1, 2), dtype=np.float32)), np.zeros((1, 1), dtype=np.float32))
    scaled = scaler.scale(loss)
    assert isinstance(scaled, nn.Loss) and scaled.value == loss.value * np.float32(8.0)


def test_optimizer_step_clears_old_gradients_first():
    context.reset()
    nn.manual_seed(0)
    model = nn.Linear(2, 1, bias=False)
    optimizer = optim.SGD(model.parameters(), lr=0.0)
    scaler = amp.GradScaler(loss_scale=4.0)
    model.parameters()[0].grad = np.full((1, 2), 1e6, dtype=np.float32)  # stale, must not be added
    x = np.ones((1, 2), dtype=np.float32)
    loss = nn.mse_loss(model(x), np.zeros((1, 1), dtype=np.float32))
    amp.optimizer_step(loss, optimizer, scaler)
    assert np.all(np.abs(model.parameters()[0].grad) < 1e3)
