"""NumPy at the interface, torch inside: conversions and the tape from arrays to tensors.

A layer returns a NumPy copy of its torch output and remembers which tensor it came from, so that
the next layer, a loss, or ``backward()`` continues on the torch autograd graph. Arrays the adapter
did not produce enter torch as constants.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

_tape: dict[int, tuple[weakref.ref, torch.Tensor]] = {}


def remember(array: np.ndarray, tensor: torch.Tensor) -> np.ndarray:
    """Note that ``array`` is the value of ``tensor``; forgotten when the array is."""
    key = id(array)

    def forget(_ref: weakref.ref, key: int = key) -> None:
        _tape.pop(key, None)

    _tape[key] = (weakref.ref(array, forget), tensor)
    return array


def tensor_of(value: Any) -> torch.Tensor | None:
    """The tensor an adapter-made array came from, or None."""
    if isinstance(value, np.ndarray):
        entry = _tape.get(id(value))
        if entry is not None and entry[0]() is value:
            return entry[1]
    return None


def to_torch(value: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The tensor behind an adapter-made array, else a new tensor with the value (copied)."""
    known = tensor_of(value)
    if known is not None:
        return known
    if isinstance(value, torch.Tensor):
        return value
    return torch.from_numpy(np.array(value, dtype=np.dtype(str(dtype).removeprefix("torch.")), copy=True))


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A float32 NumPy copy of ``tensor`` (integer tensors keep their type)."""
    detached = tensor.detach()
    if detached.is_floating_point():
        detached = detached.to(torch.float32)
    return detached.cpu().numpy().copy()


def output(tensor: torch.Tensor) -> np.ndarray:
    """A layer's result at the interface: a NumPy copy that remembers its tensor."""
    return remember(to_numpy(tensor), tensor)


def scalar(value: Any) -> float | int:
    """A plain Python number from a tensor, NumPy scalar or number."""
    if isinstance(value, torch.Tensor):
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value
