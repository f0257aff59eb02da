"""Layer normalisation over the last dimension."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.arguments import check_float_array, check_real
from csconform.engine.nn.module import Array, Module, forward_pass
from csconform.engine.nn.parameter import Parameter, layer_size
from csconform.engine.precision import compute_operand


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, statistics over the last dimension."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5) -> None:
        self.size = layer_size("normalized_shape", normalized_shape)
        self.eps = np.float32(check_real("eps", eps, minimum=0.0, exclusive_minimum=True))
        self.weight = Parameter(np.ones(self.size, dtype=np.float32))
        self.bias = Parameter(np.zeros(self.size, dtype=np.float32))

    def forward(self, x: Any) -> Array:
        return self.forward_rounded(compute_operand(check_float_array("input", x, last_dim=self.size)))

    @forward_pass
    def forward_rounded(self, x: Array) -> Array:
        """Forward on an operand the caller has already rounded (saves rounding it twice)."""
        centred = x - x.mean(axis=-1, keepdims=True)
        self._inv_std = np.float32(1.0) / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + self.eps)
        self._x_hat = centred * self._inv_std
        self._w = compute_operand(self.weight.data)
        return self._x_hat * self._w + compute_operand(self.bias.data)

    def backward(self, grad_out: Array) -> Array:
        grad = compute_operand(grad_out)
        reduce_axes = tuple(range(grad.ndim - 1))
        self.weight.accumulate_grad((grad * self._x_hat).sum(axis=reduce_axes, dtype=np.float32))
        self.bias.accumulate_grad(grad.sum(axis=reduce_axes, dtype=np.float32))
        d_x_hat = grad * self._w
        mean_d = d_x_hat.mean(axis=-1, keepdims=True)
        mean_d_x_hat = (d_x_hat * self._x_hat).mean(axis=-1, keepdims=True)
        return (d_x_hat - mean_d - self._x_hat * mean_d_x_hat) * self._inv_std
