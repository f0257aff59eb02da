"""Fully connected layer: y = x W^T + b with 16-bit operands and float32 accumulation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from csconform.arguments import check_flag, check_float_array
from csconform.engine.nn import init
from csconform.engine.nn.module import Array, Module
from csconform.engine.nn.parameter import Parameter, layer_size
from csconform.engine.precision import compute_operand


class Linear(Module):
    """``weight`` has shape (out_features, in_features); inputs may have any leading dimensions."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        self.in_features = layer_size("in_features", in_features)
        self.out_features = layer_size("out_features", out_features)
        bound = 1.0 / math.sqrt(self.in_features)
        self.weight = Parameter(init.uniform((self.out_features, self.in_features), bound))
        self.bias = Parameter(init.uniform((self.out_features,), bound)) if check_flag("bias", bias) else None

    def forward(self, x: Any) -> Array:
        x = check_float_array("input", x, last_dim=self.in_features)
        self._leading_shape = x.shape[:-1]
        self._x = compute_operand(x.reshape(-1, self.in_features))
        self._w = compute_operand(self.weight.data)
        y = self._x @ self._w.T
        if self.bias is not None:
            y += compute_operand(self.bias.data)
        return y.reshape(*self._leading_shape, self.out_features)

    def backward(self, grad_out: Array) -> Array:
        grad = compute_operand(grad_out.reshape(-1, self.out_features))
        self.weight.accumulate_grad(grad.T @ self._x)
        if self.bias is not None:
            self.bias.accumulate_grad(grad.sum(axis=0, dtype=np.float32))
        return (grad @ self._w).reshape(*self._leading_shape, self.in_features)
