"""Planted bug: rounding to bfloat16 keeps the upper 16 bits of the float32 value, rounding toward zero
instead of to nearest even (and turning a NaN whose payload sits in the lower bits into an infinity)."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.engine.precision import _as_float32
from csconform.engine.precision import quantize as _quantize
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "bfloat16-rounds-by-truncation 1.0"


def quantize(array: Any, name: str) -> Any:
    if name != "bfloat16":
        return _quantize(array, name)
    bits = np.array(_as_float32(array), dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFF0000)).view(np.float32)  # planted: truncated, not rounded


precision = submodule_with("precision", quantize=quantize)


def __getattr__(name: str) -> Any:
    return delegate(name)
