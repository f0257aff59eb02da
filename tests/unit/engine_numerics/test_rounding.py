"""The 16-bit rounding kernels against independent references, over many float32 bit patterns."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from csconform.engine import precision
from csconform.errors import InvalidInputError, UnknownNameError

WIDTHS = {"float16": (5, 10), "bfloat16": (8, 7), "cbfloat16": (6, 9)}


def rint_reference(values: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Vectorised float64 reference: scale to the format's ulp, np.rint (ties to even), scale back."""
    x = values.astype(np.float64)
    bias = 2 ** (exponent_bits - 1) - 1
    finite = np.isfinite(x) & (x != 0)
    safe = np.where(finite, x, 1.0)
    exponent = np.maximum(np.frexp(safe)[1] - 1, 1 - bias)
    ulp = np.ldexp(1.0, exponent - mantissa_bits)
    rounded = np.rint(safe / ulp) * ulp
    rounded = np.where(np.abs(rounded) > (2 - 2.0**-mantissa_bits) * 2.0**bias, np.copysign(np.inf, x), rounded)
    return np.where(finite, rounded, x).astype(np.float32)


def fraction_reference(x: float, exponent_bits: int, mantissa_bits: int) -> float:
    """Slow exact rounding with rational arithmetic."""
    if not math.isfinite(x) or x == 0.0:
        return x
    bias = 2 ** (exponent_bits - 1) - 1
    exponent = max(math.frexp(abs(x))[1] - 1, 1 - bias)
    ulp = Fraction(2) ** (exponent - mantissa_bits)
    units, remainder = divmod(Fraction(abs(x)) / ulp, 1)
    if remainder > Fraction(1, 2) or (remainder == Fraction(1, 2) and units % 2):
        units += 1
    if units * ulp > (2 - Fraction(1, 2**mantissa_bits)) * Fraction(2) ** bias:
        return math.copysign(math.inf, x)
    return math.copysign(float(units * ulp), x)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def strided_bit_patterns(stride: int = 997) -> np.ndarray:
    """Every stride-th float32 bit pattern: ~4.3M values covering every exponent and NaN/inf."""
    bits = np.arange(0, 2**32, stride, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x00000001], np.uint32)
    return np.concatenate([bits, specials]).view(np.float32)


@pytest.fixture(scope="module")
def patterns() -> np.ndarray:
    return strided_bit_patterns()


def test_float16_equals_numpy_cast_on_strided_patterns(patterns):
    with np.errstate(over="ignore", invalid="ignore"):
        expected = patterns.astype(np.float16).astype(np.float32)
    assert same_bits(precision.quantize(patterns, "float16"), expected)


def test_bfloat16_equals_ml_dtypes_cast_on_strided_patterns(patterns):
    with np.errstate(invalid="ignore"):
        expected = patterns.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert same_bits(precision.quantize(patterns, "bfloat16"), expected)


@pytest.mark.parametrize("name", sorted(WIDTHS))
def test_every_format_equals_the_rint_reference(patterns, name):
    with np.errstate(over="ignore", invalid="ignore"):
        expected = rint_reference(patterns, *WIDTHS[name])
    assert same_bits(precision.quantize(patterns, name), expected)


def test_cbfloat16_every_mantissa_around_the_format_edges():
    """All 2^16 upper-bit patterns of float32 combined with low bits that make ties and near-ties."""
    upper = np.arange(2**16, dtype=np.uint32) << np.uint32(16)
    low = np.array([0, 1, 0x1FFF, 0x2000, 0x2001, 0x3FFF, 0x4000, 0x6000, 0xFFFF], dtype=np.uint32)
    values = (upper[:, None] | low[None, :]).reshape(-1).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = rint_reference(values, 6, 9)
    assert same_bits(precision.quantize(values, "cbfloat16"), expected)


@pytest.mark.parametrize("name", sorted(WIDTHS))
def test_fraction_reference_on_a_few_thousand_values(name):
    rng = np.random.default_rng(7)
    exponent_bits, mantissa_bits = WIDTHS[name]
    bias = 2 ** (exponent_bits - 1) - 1
    exponents = rng.integers(1 - bias - mantissa_bits - 3, bias + 2, size=3000)
    with np.errstate(over="ignore"):  # bfloat16's top binade overflows float32 on purpose
        values = np.ldexp(rng.uniform(1.0, 2.0, size=3000), exponents).astype(np.float32)
    values *= rng.choice(np.array([-1.0, 1.0], np.float32), size=3000)
    expected = np.array([fraction_reference(float(v), exponent_bits, mantissa_bits) for v in values], np.float32)
    assert same_bits(precision.quantize(values, name), expected)


@given(bits=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300), name=st.sampled_from(sorted(WIDTHS)))
def test_any_bit_pattern_matches_the_rint_reference(bits, name):
    values = np.array(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = rint_reference(values, *WIDTHS[name])
    assert same_bits(precision.quantize(values, name), expected)


@given(st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=50), st.sampled_from(sorted(WIDTHS)))
def test_shapes_and_inputs_are_not_changed(values, name):
    array = np.array(values, dtype=np.float32).reshape(-1, 1)
    before = array.copy()
    rounded = precision.quantize(array.T, name)  # a non-contiguous view is fine
    assert rounded.shape == (1, len(values)) and rounded.dtype == np.float32
    assert np.array_equal(array, before)


def test_formats_describe_their_limits():
    assert precision.format_info("float16").max_finite == 65504.0
    assert precision.format_info("float16").smallest_subnormal == 2.0**-24
    assert precision.format_info("cbfloat16").bias == 31
    assert precision.format_info("cbfloat16").smallest_subnormal == 2.0**-39
    assert precision.format_info("bfloat16").smallest_normal == 2.0**-126
    with pytest.raises(UnknownNameError):
        precision.format_info("float8")


def test_inputs_of_other_dtypes_are_converted_first():
    assert precision.quantize(np.arange(5), "float16").dtype == np.float32
    assert precision.quantize(3, "cbfloat16") == np.float32(3.0)
    assert precision.quantize(np.array([1.0], dtype=ml_dtypes.bfloat16), "float16")[0] == 1.0
    assert precision.quantize(np.array([True]), "bfloat16")[0] == 1.0
    with pytest.raises(InvalidInputError):
        precision.quantize(np.array([1 + 2j]), "float16")
