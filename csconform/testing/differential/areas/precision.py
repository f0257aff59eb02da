"""Precision: rounding every class of float32 bit pattern to the 16-bit formats, and the precision settings.

A program rounds arrays with ``precision.quantize`` and may change and read the half dtype and the
compute precision. The arrays are drawn by class of float32 bit pattern, for the format being
rounded to: zeros of both signs, float32 subnormals, the format's subnormal and normal ranges,
values exactly halfway between two neighbours of the format (ties, to even or not), the largest
finite value and the overflow boundary just above it, float32's extremes, infinities, and NaNs with
every kind of payload (quiet, signalling, negative). Now and then the input is not a float32 array
(float64, integers, a Python list). Arrays print as bit patterns, so a NaN's payload is exact.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from csconform.testing.differential.areas import Area, Context
from csconform.testing.differential.areas.values import branch, sometimes
from csconform.testing.differential.program import call

FORMATS = ("bfloat16", "float16", "cbfloat16")
MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "cbfloat16": 9}
EXPONENT_BITS = {"float16": 5, "bfloat16": 8, "cbfloat16": 6}


@st.composite
def bit_pattern(draw: st.DrawFn, name: str) -> int:
    """The bits of one float32 value from a class of patterns that matter when rounding to ``name``."""
    mantissa, exponent = MANTISSA_BITS[name], EXPONENT_BITS[name]
    dropped = 23 - mantissa  # float32 mantissa bits the format does not keep
    bias = 2 ** (exponent - 1) - 1
    sign = draw(st.sampled_from([0, 0x80000000]))
    kind = draw(branch(11))
    if kind == 0:  # a normal value inside the format's range
        biased = draw(st.integers(127 + 1 - bias, 127 + bias))
        return sign | biased << 23 | draw(st.integers(0, 2**23 - 1))
    if kind == 1:  # exactly halfway between two neighbours: ties to even, both ways
        biased = draw(st.integers(127 + 1 - bias, 127 + bias))
        kept = draw(st.integers(0, 2**mantissa - 1)) << dropped
        return sign | biased << 23 | kept | 1 << (dropped - 1)
    if kind == 2:  # the format's subnormal range (bfloat16's is float32's own: exponent field 0)
        lowest = max(0, 127 + 1 - bias - mantissa - 1)
        biased = draw(st.integers(lowest, max(lowest, 127 - bias)))
        return sign | biased << 23 | draw(st.integers(0, 2**23 - 1))
    if kind == 3:  # the largest finite value, its ulp neighbours and the overflow boundary above it
        largest = (127 + bias) << 23 | (2**mantissa - 1) << dropped
        return sign | draw(
            st.sampled_from(
                [largest, largest + (1 << (dropped - 1)), largest + (1 << (dropped - 1)) - 1, largest + (1 << dropped)]
            )
        )
    if kind == 4:  # zeros and float32 subnormals
        return sign | draw(st.sampled_from([0, 1, 0x7FFFFF, draw(st.integers(1, 0x7FFFFF))]))
    if kind == 5:  # float32's extremes
        return sign | draw(st.sampled_from([0x7F7FFFFF, 0x00800000, 0x7F000000]))
    if kind == 6:  # infinities
        return sign | 0x7F800000
    if kind == 7:  # NaN: quiet, quiet with a payload, signalling with a payload
        payload = draw(
            st.sampled_from([0x400000, 0x400001, 0x000001, 0x200000, 0x7FFFFF, draw(st.integers(1, 0x7FFFFF))])
        )
        return sign | 0x7F800000 | payload
    # anything at all
    return draw(st.integers(0, 2**32 - 1))


@st.composite
def rounding_input(draw: st.DrawFn, name: str) -> object:
    """The array to round: float32 bit patterns, or now and then another kind of input."""
    bits = draw(st.lists(bit_pattern(name), min_size=1, max_size=6))
    values = np.array(bits, dtype=np.uint32).view(np.float32)
    kind = draw(branch(10))
    if kind == 0:
        with np.errstate(invalid="ignore"):  # a signalling NaN sets the flag; it stays a NaN
            return values.astype(np.float64)
    if kind == 1:
        return [float(v) for v in values if np.isfinite(v)] or [1.0]
    if kind == 2:
        return np.array(draw(st.lists(st.integers(-70000, 70000), min_size=1, max_size=4)), dtype=np.int64)
    return values


@st.composite
def precision_call(draw: st.DrawFn) -> str:
    choice = draw(branch(8))
    if choice == 0:
        return call("impl.precision.set_half_dtype", draw(st.sampled_from([*FORMATS, "float32", "fp16"])))
    if choice == 1:
        return "impl.precision.half_dtype_name()"
    if choice == 2:
        return call("impl.precision.set_compute_precision", draw(st.sampled_from(["mixed", "float32", "half", "fp32"])))
    if choice == 3:
        return "impl.precision.compute_precision()"
    rare = draw(sometimes(6))
    name = draw(st.sampled_from([*FORMATS, "float8"])) if rare else draw(st.sampled_from(FORMATS[:2]))
    return call("impl.precision.quantize", draw(rounding_input(name if name in MANTISSA_BITS else "float16")), name)


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    return draw(st.lists(precision_call(), min_size=1, max_size=6))


AREA = Area(
    "precision",
    "precision: every class of float32 bit pattern rounded to the 16-bit formats, NaN payloads, the settings",
    frozenset({"precision"}),
    statements,
    nan_payloads=True,
)
