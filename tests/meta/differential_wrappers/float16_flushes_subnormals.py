"""Planted bug: rounding to float16 flushes the format's subnormal results to zero (as hardware in a
flush-to-zero mode does); the engine keeps float16's gradual underflow."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.engine.precision import format_info
from csconform.engine.precision import quantize as _quantize
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "float16-flushes-subnormals 1.0"


def quantize(array: Any, name: str) -> Any:
    rounded = _quantize(array, name)
    if name != "float16":
        return rounded
    tiny = np.abs(rounded) < np.float32(format_info(name).smallest_normal)
    return np.where(tiny, np.copysign(np.float32(0.0), rounded), rounded)  # planted: flushed to zero


precision = submodule_with("precision", quantize=quantize)


def __getattr__(name: str) -> Any:
    return delegate(name)
