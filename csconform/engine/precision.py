"""Number formats and the compute precision of the reference engine.

The CS system trains in mixed precision only: weights are stored in float32, every operation other
than the weight update reads 16-bit inputs and accumulates in float32. The engine emulates this at
BLAS speed: an operand is *quantized* (rounded to the 16-bit format, but kept as float32 values) and
the operation then runs in ordinary float32 NumPy. Three 16-bit formats exist:

* ``float16``   IEEE binary16 (NumPy's own cast),
* ``bfloat16``  1-8-7, float32's range (the ``ml_dtypes`` cast),
* ``cbfloat16`` Cerebras' 1-6-9 format. It has no NumPy dtype, so we round on the float32 bit
  pattern. Assumptions (the public documents give only the field widths): IEEE-style exponent bias
  31, gradual underflow to subnormals, round-to-nearest-even, overflow to +-inf, NaN preserved.

All rounding starts from float32: the input is converted to float32 first (the engine's storage
type) and then rounded once to the 16-bit format.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from numpy.typing import ArrayLike, NDArray

from csconform.engine import context
from csconform.errors import InvalidInputError, PrecisionError, UnknownNameError


@dataclass(frozen=True)
class FormatInfo:
    """Field widths and limits of a binary floating point format (IEEE-style bias)."""

    name: str
    exponent_bits: int
    mantissa_bits: int

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_finite(self) -> float:
        return float((2.0 - 2.0**-self.mantissa_bits) * 2.0**self.bias)

    @property
    def smallest_normal(self) -> float:
        return float(2.0 ** (1 - self.bias))

    @property
    def smallest_subnormal(self) -> float:
        return float(2.0 ** (1 - self.bias - self.mantissa_bits))


FORMATS: dict[str, FormatInfo] = {
    "float16": FormatInfo("float16", exponent_bits=5, mantissa_bits=10),
    "bfloat16": FormatInfo("bfloat16", exponent_bits=8, mantissa_bits=7),
    "cbfloat16": FormatInfo("cbfloat16", exponent_bits=6, mantissa_bits=9),
}


def format_info(name: str) -> FormatInfo:
    """The field widths and limits of the 16-bit format ``name``."""
    return FORMATS[_check_format_name(name)]


def _check_format_name(name: object) -> str:
    if not isinstance(name, str) or name not in FORMATS:
        raise UnknownNameError(f"unknown 16-bit format {name!r}; known formats: {', '.join(FORMATS)}")
    return name


# --- rounding -------------------------------------------------------------------------------------

_FLOAT32_MANTISSA_BITS = 23
_FLOAT32_BIAS = 127
_CB16 = FORMATS["cbfloat16"]
_CB16_DROPPED_BITS = _FLOAT32_MANTISSA_BITS - _CB16.mantissa_bits  # 14 low float32 bits are cut
# float32 exponent field of the smallest cbfloat16 normal (2**-30) and of the first overflow (2**32)
_CB16_MIN_NORMAL_FIELD = 1 - _CB16.bias + _FLOAT32_BIAS
_CB16_OVERFLOW_BITS = np.uint32((_CB16.bias + 1 + _FLOAT32_BIAS) << _FLOAT32_MANTISSA_BITS)
_FLOAT32_INF_BITS = np.uint32(0x7F800000)


def _round_to_cbfloat16(values: NDArray[np.float32]) -> NDArray[np.float32]:
    """Round float32 values to cbfloat16 (round-to-nearest-even) working on the integer bits."""
    bits = values.view(np.uint32)
    sign = bits & np.uint32(0x80000000)
    magnitude = bits & np.uint32(0x7FFFFFFF)
    exponent_field = magnitude >> np.uint32(_FLOAT32_MANTISSA_BITS)

    # Normal range: add just under half an ulp (plus one if the kept lsb is odd) and cut the low bits.
    # A carry out of the mantissa moves correctly into the exponent; beyond the top binade -> inf.
    kept_lsb = (magnitude >> np.uint32(_CB16_DROPPED_BITS)) & np.uint32(1)
    half_ulp_minus_one = np.uint32((1 << (_CB16_DROPPED_BITS - 1)) - 1)
    rounded = (magnitude + half_ulp_minus_one + kept_lsb) & ~np.uint32((1 << _CB16_DROPPED_BITS) - 1)
    normal = np.where(rounded >= _CB16_OVERFLOW_BITS, _FLOAT32_INF_BITS, rounded)

    # Subnormal range (|x| < 2**-30): count units of the smallest subnormal 2**-39, rounding the
    # full significand right by a per-element shift. Shifts beyond 25 give 0 like a shift of 25.
    significand = (magnitude & np.uint32(0x7FFFFF)) | np.uint32(0x800000)
    shift = np.clip(
        _CB16_MIN_NORMAL_FIELD + _CB16_DROPPED_BITS - exponent_field.astype(np.int64), 1, 25
    ).astype(np.uint32)
    units = significand >> shift
    remainder = significand & ((np.uint32(1) << shift) - np.uint32(1))
    half_unit = np.uint32(1) << (shift - np.uint32(1))
    round_up = (remainder > half_unit) | ((remainder == half_unit) & (units & np.uint32(1)).astype(bool))
    units = units + round_up.astype(np.uint32)
    subnormal = (units.astype(np.float32) * np.float32(_CB16.smallest_subnormal)).view(np.uint32)

    is_subnormal = exponent_field < np.uint32(_CB16_MIN_NORMAL_FIELD)
    result = np.where(is_subnormal, subnormal, normal) | sign
    is_nan_or_inf = exponent_field == np.uint32(0xFF)
    return np.where(is_nan_or_inf, bits, result).view(np.float32)


def quantize(array: ArrayLike, name: str) -> NDArray[np.float32]:
    """Round ``array`` to the 16-bit format ``name``; the result holds float32 values.

    Bit-exact: each value is converted to float32 and then rounded once, to nearest with ties to
    even, overflowing to +-inf; NaN stays NaN. The result is a new array (the input is not changed).
    """
    name = _check_format_name(name)
    values = _as_float32(array)
    with np.errstate(over="ignore", invalid="ignore"):
        if name == "float16":
            return values.astype(np.float16).astype(np.float32)
        if name == "bfloat16":
            return values.astype(ml_dtypes.bfloat16).astype(np.float32)
        return _round_to_cbfloat16(np.ascontiguousarray(values))


def _as_float32(array: ArrayLike) -> NDArray[np.float32]:
    try:
        values = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"expected a numeric array, got {type(array).__name__}") from exc
    if values.dtype.kind not in "biuf" and values.dtype != ml_dtypes.bfloat16:
        raise InvalidInputError(f"expected a real numeric array, got dtype {values.dtype}")
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float32)


# --- the half dtype -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProxyDType:
    """Stands in for a 16-bit format that has no NumPy dtype (cbfloat16).

    The documents describe the same for PyTorch: a proxy dtype is used in the model and converted to
    the real format during compilation. Here the engine converts by quantizing operands.
    """

    name: str

    @property
    def itemsize(self) -> int:
        return 2


_NUMPY_HALF_DTYPES: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}


def set_half_dtype(value: str | np.dtype | type | ProxyDType) -> np.dtype | ProxyDType:
    """Choose the 16-bit format the engine computes with; float16 is the default.

    Accepts a format name, NumPy's float16 or ml_dtypes.bfloat16 (as a dtype or a scalar type) or a
    returned ``ProxyDType``. Returns the dtype to use in the model: the real NumPy dtype where one
    exists, else a ``ProxyDType`` (cbfloat16).
    """
    name = _half_dtype_name(value)
    context.set_half_dtype_name(name)
    return half_dtype()


def half_dtype() -> np.dtype | ProxyDType:
    """The dtype (or proxy) of the current 16-bit format."""
    name = context.half_dtype_name()
    return _NUMPY_HALF_DTYPES.get(name) or ProxyDType(name)


def _half_dtype_name(value: object) -> str:
    if isinstance(value, str):
        return _check_format_name(value)
    if isinstance(value, ProxyDType):
        return _check_format_name(value.name)
    try:
        dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        dtype = None
    for name, known in _NUMPY_HALF_DTYPES.items():
        if dtype == known:
            return name
    raise UnknownNameError(
        f"unsupported half dtype {value!r}; use one of {', '.join(FORMATS)} "
        "(or numpy.float16 / ml_dtypes.bfloat16)"
    )


# --- compute precision ----------------------------------------------------------------------------

COMPUTE_PRECISIONS = ("mixed", "float32")
DEFAULT_COMPUTE_PRECISION = "mixed"
_ONLY_MIXED_MESSAGE = (
    "only mixed precision is supported for training on the CS system (weights in float32, compute "
    "on 16-bit inputs with float32 accumulation); compute precision {mode!r} is available on target cpu"
)
_state = {"compute_precision": DEFAULT_COMPUTE_PRECISION}


def set_compute_precision(mode: str) -> None:
    """Select ``"mixed"`` (default) or ``"float32"``; on target cs only ``"mixed"`` is accepted."""
    if mode not in COMPUTE_PRECISIONS:
        raise UnknownNameError(
            f"unknown compute precision {mode!r}; known: {', '.join(COMPUTE_PRECISIONS)}"
        )
    if mode != "mixed" and context.on_cs():
        raise PrecisionError(_ONLY_MIXED_MESSAGE.format(mode=mode))
    _state["compute_precision"] = mode


def compute_precision() -> str:
    """The compute precision that operations will use now."""
    return _state["compute_precision"]


def compute_operand(array: NDArray[np.float32]) -> NDArray[np.float32]:
    """An operand as an operation reads it: rounded to the half dtype in mixed precision.

    Every engine operation calls this on its inputs, so the casts are inserted by the engine and
    never by the user. A float32 precision chosen on cpu is refused if the target is now cs.
    """
    mode = compute_precision()
    if mode == "mixed":
        return quantize(array, context.half_dtype_name())
    if context.on_cs():
        raise PrecisionError(_ONLY_MIXED_MESSAGE.format(mode=mode))
    return np.asarray(array, dtype=np.float32)


@context.on_reset
def _reset() -> None:
    _state["compute_precision"] = DEFAULT_COMPUTE_PRECISION
