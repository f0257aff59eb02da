"""Elementwise activations: 16-bit-rounded inputs, float32 arithmetic."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.arguments import check_float_array
from csconform.engine.nn.module import Array, Module
from csconform.engine.precision import compute_operand

_SQRT_2_OVER_PI = np.float32(np.sqrt(2.0 / np.pi))
_GELU_CUBIC = np.float32(0.044715)


class ReLU(Module):
    """max(x, 0), with a NaN kept as NaN (as PyTorch's relu does), never turned into 0: a corrupt
    input must reach the loss and the gradients, where the GradScaler's check sees it
    (PRECISION-030); the gradient passes where the input was positive or NaN, as PyTorch's does.
    It commutes with rounding (relu(round(x)) == round(relu(x)), round(0) == 0), so it leaves the
    rounding of its input and of its gradient to the operation that consumes them."""

    def forward(self, x: Any) -> Array:
        x = check_float_array("input", x)
        self._kept = ~(x <= 0)  # positive or NaN
        return np.where(self._kept, x, np.float32(0.0))

    def backward(self, grad_out: Array) -> Array:
        return np.where(self._kept, grad_out, np.float32(0.0))


class Tanh(Module):
    def forward(self, x: Any) -> Array:
        self._y: Array = np.tanh(compute_operand(check_float_array("input", x)))
        return self._y

    def backward(self, grad_out: Array) -> Array:
        return compute_operand(grad_out) * (np.float32(1.0) - self._y * self._y)


class GELU(Module):
    """GELU in its tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    def forward(self, x: Any) -> Array:
        x = compute_operand(check_float_array("input", x))
        self._x = x
        self._t = np.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x))
        return np.float32(0.5) * x * (np.float32(1.0) + self._t)

    def backward(self, grad_out: Array) -> Array:
        x, t = self._x, self._t
        du_dx = _SQRT_2_OVER_PI * (np.float32(1.0) + np.float32(3.0) * _GELU_CUBIC * x * x)
        dy_dx = np.float32(0.5) * (np.float32(1.0) + t) + np.float32(0.5) * x * (np.float32(1.0) - t * t) * du_dx
        return compute_operand(grad_out) * dy_dx
