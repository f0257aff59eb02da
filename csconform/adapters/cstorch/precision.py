"""Capability ``precision`` over ``cstorch.amp``: the half dtype and mixed precision on the CPU.

``cstorch.amp.set_half_dtype`` chooses the 16-bit format and turns mixed precision on. On its CPU
backend the package computes mixed precision through ``cstorch.amp.autocast()``, which it allows
only for bfloat16; float16 and cbfloat16 arithmetic exist only on the CS system (cbfloat16 is a
proxy ``torch.float16`` dtype until a CS compile converts it). Where a check needs what the CPU
backend cannot do, the adapter says so (``Unsupported``, with the package's own words).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import cerebras.pytorch as cstorch
import ml_dtypes
import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from csconform.adapters.cstorch.refusals import refusals
from csconform.errors import InvalidInputError, UnknownNameError, Unsupported

COMPUTE_PRECISIONS = ("mixed", "float32")
"""Mixed precision (autocast) or plain float32: the package has no pure 16-bit compute mode."""

_TORCH_FORMATS = {"float16": torch.float16, "bfloat16": torch.bfloat16}
_NUMPY_OF_TORCH = {torch.float16: np.dtype(np.float16), torch.bfloat16: np.dtype(ml_dtypes.bfloat16)}


def _torch_value(value: Any) -> Any:
    """A format name or a torch dtype, as ``cstorch.amp.set_half_dtype`` takes it."""
    if isinstance(value, str):
        return value
    try:
        dtype = np.dtype(value)
    except TypeError:
        return value
    for torch_dtype, numpy_dtype in _NUMPY_OF_TORCH.items():
        if dtype == numpy_dtype:
            return torch_dtype
    return value


def set_half_dtype(value: Any) -> Any:
    """``cstorch.amp.set_half_dtype``; its torch dtype comes back as the NumPy dtype of the same format."""
    with refusals({ValueError: UnknownNameError}):
        returned = cstorch.amp.set_half_dtype(_torch_value(value))
    return _NUMPY_OF_TORCH.get(returned, returned)


def half_dtype_name() -> str:
    return str(cstorch.amp.get_half_dtype_str())


def set_compute_precision(mode: str) -> None:
    if mode == "half":
        raise Unsupported("cerebras.pytorch has no pure 16-bit compute mode (mixed precision or float32 only)")
    if mode not in COMPUTE_PRECISIONS:
        raise UnknownNameError(f"unknown compute precision {mode!r}; known: {', '.join(COMPUTE_PRECISIONS)}")
    cstorch.amp.enable_mixed_precision(mode == "mixed")


def compute_precision() -> str:
    return "mixed" if cstorch.amp.mixed_precision() else "float32"


@contextmanager
def compute() -> Iterator[None]:
    """Run a forward pass the way the CPU backend computes in the current precision."""
    if not cstorch.amp.mixed_precision():
        yield
        return
    try:
        context = cstorch.amp.autocast()
        context.__enter__()
    except ValueError as exc:
        raise Unsupported(
            f"mixed precision with {half_dtype_name()} on the CPU backend: cerebras.pytorch: {exc}"
        ) from exc
    try:
        yield
    finally:
        context.__exit__(None, None, None)


def quantize(array: ArrayLike, name: str) -> NDArray[np.float32]:
    """``array`` cast to the 16-bit format the package uses for ``name``, as float32."""
    if name == "cbfloat16":
        raise Unsupported(
            "cbfloat16 values cannot be produced on the CPU backend: cerebras.pytorch represents cbfloat16 by "
            "the proxy dtype torch.float16 and converts it only when compiling for a CS system"
        )
    if name not in _TORCH_FORMATS:
        raise UnknownNameError(f"unknown 16-bit format {name!r}; known: float16, bfloat16, cbfloat16")
    try:
        given = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"quantize takes numbers, got {type(array).__name__}: {exc}") from None
    if given.dtype.kind not in "biuf":  # what torch takes as real numbers (torch.as_tensor refuses str, object)
        raise InvalidInputError(f"quantize takes real numbers, got an array of dtype {given.dtype}")
    with np.errstate(over="ignore"):
        values = given.astype(np.float32)  # every value becomes float32 first, then rounds once
    rounded = torch.from_numpy(values.copy()).to(_TORCH_FORMATS[name]).to(torch.float32)
    return rounded.numpy()
