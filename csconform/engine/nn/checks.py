"""Argument checks shared by the layers: clear typed errors instead of NumPy tracebacks."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from csconform.errors import InvalidInputError


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def probability(name: str, value: object) -> float:
    """A real number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) < 1.0:
        raise InvalidInputError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


def float_input(x: Any, last_dim: int | None = None, name: str = "input") -> NDArray[np.float32]:
    """A finite-or-not real array as float32, optionally with a required last dimension."""
    try:
        values = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric array") from exc
    if values.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must be a real numeric array, got dtype {values.dtype}")
    if last_dim is not None and (values.ndim == 0 or values.shape[-1] != last_dim):
        raise InvalidInputError(f"{name} must have last dimension {last_dim}, got shape {values.shape}")
    return values.astype(np.float32, copy=False)
