"""Argument checks shared by the layers: clear typed errors instead of NumPy tracebacks."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from csconform.errors import InvalidInputError

MAX_PARAMETER_ELEMENTS = 2**31
"""Most elements one weight may hold (8 GiB of float32): sizes are checked against it before the
weight is allocated, so a mistyped size is a clear error instead of a MemoryError."""


def positive_int(name: str, value: object, limit: int = MAX_PARAMETER_ELEMENTS) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= limit:
        raise InvalidInputError(f"{name} must be a positive integer up to {limit}, got {value!r}")
    return int(value)


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


def seed(name: str, value: object) -> int:
    """A random seed: a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def flag(name: str, value: object) -> bool:
    """A bool (NumPy's included)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def positive_real(name: str, value: object) -> float:
    """A finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < float("inf"):
        raise InvalidInputError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def integer_input(x: Any, name: str = "input") -> NDArray[np.integer]:
    """An integer array (class indices, token ids)."""
    try:
        values = np.asarray(x)
    except (TypeError, ValueError) as exc:  # a ragged list, an object NumPy cannot hold
        raise InvalidInputError(f"{name} must be an integer array, got {type(x).__name__}") from exc
    if values.dtype.kind not in "iu":
        raise InvalidInputError(f"{name} must be integers, got dtype {values.dtype}")
    return values


def probability(name: str, value: object) -> float:
    """A real number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) < 1.0:
        raise InvalidInputError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


def float_input(x: Any, last_dim: int | None = None, name: str = "input") -> NDArray[np.float32]:
    """A finite-or-not real array as float32, optionally with a required last dimension."""
    try:
        values = np.asarray(x)
    except (TypeError, ValueError) as exc:  # a ragged list, an object NumPy cannot hold
        raise InvalidInputError(f"{name} must be a numeric array, got {type(x).__name__}") from exc
    if values.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must be a real numeric array, got dtype {values.dtype}")
    if last_dim is not None and (values.ndim == 0 or values.shape[-1] != last_dim):
        raise InvalidInputError(f"{name} must have last dimension {last_dim}, got shape {values.shape}")
    return values.astype(np.float32, copy=False)
