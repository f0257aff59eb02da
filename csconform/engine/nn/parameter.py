"""Trainable weights: float32 master copies with a float32 gradient slot, and the sizes they may have."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from csconform.arguments import check_integer
from csconform.errors import InvalidInputError

MAX_PARAMETER_ELEMENTS = 2**31
"""Most elements one weight may hold (8 GiB of float32): sizes are checked against it before the
weight is allocated, so a mistyped size is a clear error instead of a MemoryError."""


def layer_size(name: str, value: object) -> int:
    """A layer's size argument (features, heads, a vocabulary): an integer in 1..MAX_PARAMETER_ELEMENTS."""
    return check_integer(name, value, minimum=1, maximum=MAX_PARAMETER_ELEMENTS)


def weight_shape(name: str, *sizes: int) -> tuple[int, ...]:
    """``sizes`` if a weight of that shape stays within MAX_PARAMETER_ELEMENTS elements."""
    elements = 1
    for size in sizes:
        elements *= size
    if elements > MAX_PARAMETER_ELEMENTS:
        raise InvalidInputError(
            f"{name}: a weight of shape {sizes} would hold {elements} elements; at most {MAX_PARAMETER_ELEMENTS}"
        )
    return sizes


class Parameter:
    """A weight tensor. ``data`` is always float32 (the master weights); ``grad`` is None or float32.

    The optimizer updates ``data`` in place, so references held elsewhere (the optimizer's param
    groups, a checkpoint writer) keep seeing the current values.
    """

    def __init__(self, data: ArrayLike) -> None:
        try:
            values = np.array(data, dtype=np.float32, copy=True)
        except (TypeError, ValueError) as exc:  # a string, a ragged list, an object
            raise InvalidInputError(f"parameter values must be an array of numbers ({exc})") from None
        if not np.all(np.isfinite(values)):
            raise InvalidInputError("parameter values must be finite")
        self.data: NDArray[np.float32] = values
        self._grad: NDArray[np.float32] | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def grad(self) -> NDArray[np.float32] | None:
        return self._grad

    @grad.setter
    def grad(self, value: ArrayLike | None) -> None:
        if value is None:
            self._grad = None
            return
        try:
            grad = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"a gradient must be an array of numbers ({exc})") from None
        if grad.shape != self.data.shape:
            raise InvalidInputError(f"gradient shape {grad.shape} does not match parameter shape {self.shape}")
        self._grad = grad

    def accumulate_grad(self, grad: NDArray[np.float32]) -> None:
        """Add a gradient contribution in float32 (backward passes accumulate until zero_grad)."""
        if self._grad is None:
            self.grad = np.array(grad, dtype=np.float32, copy=True)
        else:
            self._grad += grad

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape})"
