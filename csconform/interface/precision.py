"""Capability ``precision``: 16-bit number formats and the compute precision.

pytorch-limitations#Floating Point Precision: only mixed precision trains on the CS system (FP32
weights, 16-bit compute). public-facts#Number formats: float16, bfloat16 and cbfloat16.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray


class PrecisionModule(Protocol):
    """``engine.precision``"""

    COMPUTE_PRECISIONS: tuple[str, ...]
    """The compute precisions it knows: ``"mixed"``, ``"float32"``, ``"half"``."""

    def quantize(self, array: ArrayLike, name: str) -> NDArray[np.float32]:
        """``array`` rounded to the 16-bit format ``name`` (nearest, ties to even), as float32."""

    def set_half_dtype(self, value: Any) -> Any:
        """Choose the 16-bit format ("float16", "bfloat16", "cbfloat16" or a dtype); return its dtype
        (a proxy dtype where NumPy has none)."""

    def half_dtype_name(self) -> str:
        """The name of the 16-bit format in use."""

    def set_compute_precision(self, mode: str) -> None:
        """Choose ``"mixed"``, ``"float32"`` or ``"half"``; only mixed on the CS system."""

    def compute_precision(self) -> str:
        """The compute precision in use."""
