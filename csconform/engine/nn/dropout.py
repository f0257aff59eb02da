"""Dropout with its own seeded generator; the identity in eval mode."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.arguments import check_float_array, check_integer, check_real
from csconform.engine.nn.module import Array, Module
from csconform.engine.precision import compute_operand


class Dropout(Module):
    """Zero each element with probability ``p`` in training and scale survivors by 1/(1-p)."""

    def __init__(self, p: float = 0.5, seed: int = 0) -> None:
        self.p = check_real("p", p, minimum=0.0, maximum=1.0, exclusive_maximum=True)
        self._rng = np.random.default_rng(check_integer("seed", seed, minimum=0, maximum=None))

    def forward(self, x: Any) -> Array:
        x = check_float_array("input", x)
        if not self.training or self.p == 0.0:
            self._scale = None
            return x
        keep = self._rng.random(x.shape) >= self.p
        self._scale = keep.astype(np.float32) / np.float32(1.0 - self.p)
        return compute_operand(x) * self._scale

    def backward(self, grad_out: Array) -> Array:
        if self._scale is None:
            return grad_out
        return compute_operand(grad_out) * self._scale
