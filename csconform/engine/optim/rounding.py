"""Float32 arithmetic rounded once: the fused multiply-add that NumPy lacks.

The vendor's optimizers update their state with torch's ``add_(x, alpha=a)`` and ``addcmul_``,
which compute ``a * x + y`` and ``(v * x) * z + y`` with one rounding on the CPU (a fused
multiply-add), where NumPy rounds the product and the sum separately. One rounding is the more
accurate of the two, so the reference engine rounds these multiply-adds once too (OPTIM-016).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


def multiply_add(factor: npt.ArrayLike, other: npt.ArrayLike, addend: npt.ArrayLike) -> Array:
    """``factor * other + addend`` of float32 operands, rounded once to float32.

    The product of two float32 values is exact in float64 (24 + 24 significant bits fit in 53). The
    float64 sum is rounded to odd (TwoSum gives its exact error; an inexact sum with an even last
    bit moves one ulp towards the exact value), which makes its rounding to float32, 29 bits
    narrower, the correct rounding of the exact ``factor * other + addend``.
    """
    product = np.asarray(factor, np.float32).astype(np.float64) * np.asarray(other, np.float32).astype(np.float64)
    addend64 = np.asarray(addend, np.float32).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        total = product + addend64
        virtual = total - product
        error = (product - (total - virtual)) + (addend64 - virtual)
        even = (total.view(np.int64) & 1) == 0
        to_odd = np.isfinite(total) & (error != 0) & even
        total = np.where(to_odd, np.nextafter(total, np.where(error > 0, np.inf, -np.inf)), total)
        return total.astype(np.float32)
