"""Number formats and the compute precision of the reference engine.

The CS system trains in mixed precision only: weights are stored in float32, every operation other
than the weight update reads 16-bit inputs and accumulates in float32. The engine emulates this at
BLAS speed: an operand is *quantized* (rounded to the 16-bit format, but kept as float32 values) and
the operation then runs in ordinary float32 NumPy. Three 16-bit formats exist:

* ``float16``   IEEE binary16 (1-5-10),
* ``bfloat16``  1-8-7, float32's range (the ``ml_dtypes`` cast),
* ``cbfloat16`` Cerebras' 1-6-9 format, with no NumPy dtype (``set_half_dtype`` returns a
  ``ProxyDType``). Assumptions (the public documents give only the field widths): IEEE-style
  exponent bias 31, gradual underflow to subnormals, round-to-nearest-even, overflow to +-inf,
  NaN preserved.

All rounding starts from float32: the input is converted to float32 first (the engine's storage
type) and then rounded once to the 16-bit format. float16 and cbfloat16 share one exact kernel
(``_round``) working on the float32 bits; NumPy's float16 cast and an exact rational rounding are
the test oracles.

The compute precision (``set_compute_precision``) is "mixed" on the CS system; target cpu also
offers "float32" (no rounding) and "half" (weights stored in the half dtype).
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


# --- rounding ---------------------------------------------------------------------------------------

_SIGN_BITS = np.uint32(0x80000000)
_MAGNITUDE_BITS = np.uint32(0x7FFFFFFF)
_EXPONENT_BITS = np.uint32(0x7F800000)


@dataclass(frozen=True)
class _Rounder:
    """Constants for rounding float32 values to a narrower IEEE-style format (see ``_round``)."""

    min_exponent_bits: np.uint32  # float32 exponent field of the format's smallest normal
    max_exponent_bits: np.uint32  # float32 exponent field of 2**(emax + 1), the first overflow
    shift_bits: np.uint32  # (23 - mantissa bits) in the float32 exponent field
    overflow: np.float32  # 2**(emax + 1): results at or above it become inf


# Built once, at import, from the field widths above.
_ROUNDERS = {
    info.name: _Rounder(
        min_exponent_bits=np.uint32((1 - info.bias + 127) << 23),
        max_exponent_bits=np.uint32((info.bias + 1 + 127) << 23),
        shift_bits=np.uint32((23 - info.mantissa_bits) << 23),
        overflow=np.float32(2.0 ** (info.bias + 1)),
    )
    for info in (FORMATS["float16"], FORMATS["cbfloat16"])
}


_CHUNK_ELEMENTS = 65536  # 256 KiB of float32: the passes below stay in the CPU cache (measured best)
# One reused scratch chunk: allocating it per call costs as much as the arithmetic (fresh pages).
# The engine is single-threaded; a caller that rounds from several threads must not share it.
_SCRATCH = np.empty(_CHUNK_ELEMENTS, dtype=np.uint32)


def _round(values: NDArray[np.float32], rounder: _Rounder) -> NDArray[np.float32]:
    """Round contiguous float32 values to nearest-even in a narrower format, exactly.

    For |x| with exponent e (clamped to the format's normal range) build, on the float32 bits,
    c = 2**(e + 23 - m). Then |x| + c lies in a binade whose float32 spacing is exactly the format's
    ulp at x (its smallest subnormal below the normal range), so the float32 adder performs the one
    round-to-nearest-even we need, and subtracting c again is exact. Magnitudes of 2**(emax + 1) or
    more become inf, NaN stays NaN, and the sign bit is copied back last. The array is processed in
    cache-sized chunks, and the speed is data-independent (NumPy's float16 cast, our test oracle, is
    an order of magnitude slower on values in float16's subnormal range, where small gradients live).
    """
    source_bits = values.reshape(-1).view(np.uint32)
    result = np.empty(source_bits.shape, dtype=np.float32)
    result_bits = result.view(np.uint32)
    for start in range(0, source_bits.size, _CHUNK_ELEMENTS):
        bits = source_bits[start : start + _CHUNK_ELEMENTS]
        magnitude_bits = result_bits[start : start + _CHUNK_ELEMENTS]
        scratch = _SCRATCH[: bits.size]
        np.bitwise_and(bits, _MAGNITUDE_BITS, out=magnitude_bits)
        np.bitwise_and(magnitude_bits, _EXPONENT_BITS, out=scratch)
        np.clip(scratch, rounder.min_exponent_bits, rounder.max_exponent_bits, out=scratch)
        scratch += rounder.shift_bits
        magnitude, shift = magnitude_bits.view(np.float32), scratch.view(np.float32)
        magnitude += shift
        magnitude -= shift
        if not magnitude.max() < rounder.overflow:  # also taken when a NaN is present
            magnitude[magnitude >= rounder.overflow] = np.inf
        np.bitwise_and(bits, _SIGN_BITS, out=scratch)
        magnitude_bits |= scratch
    return result.reshape(values.shape)


def quantize(array: ArrayLike, name: str) -> NDArray[np.float32]:
    """Round ``array`` to the 16-bit format ``name``; the result holds float32 values.

    Bit-exact: each value is converted to float32 and then rounded once, to nearest with ties to
    even, overflowing to +-inf; NaN stays NaN. The result is a new array (the input is not changed).
    float16 and cbfloat16 are rounded by ``_round`` (equal to NumPy's float16 cast, which the tests
    use as the oracle, but fast on every input); bfloat16 uses the ml_dtypes cast.
    """
    name = _check_format_name(name)
    values = np.asarray(_as_float32(array), order="C")
    if name == "bfloat16":
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(ml_dtypes.bfloat16).astype(np.float32)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs raise the invalid flag; they stay NaN
        return _round(values, _ROUNDERS[name])


def _as_float32(array: ArrayLike) -> NDArray[np.float32]:
    try:
        values = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"expected a numeric array, got {type(array).__name__}") from exc
    if values.dtype.kind not in "biuf" and values.dtype != ml_dtypes.bfloat16:
        raise InvalidInputError(f"expected a real numeric array, got dtype {values.dtype}")
    if values.dtype == np.float32:
        return values
    with np.errstate(over="ignore"):
        return values.astype(np.float32)


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


def half_dtype_name() -> str:
    """The name of the 16-bit format in use ("float16" unless set)."""
    return context.half_dtype_name()


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
        f"unsupported half dtype {value!r}; use one of {', '.join(FORMATS)} (or numpy.float16 / ml_dtypes.bfloat16)"
    )


# --- compute precision ----------------------------------------------------------------------------

# "mixed": 16-bit operands, float32 accumulation, float32 master weights (the CS system's only mode).
# "float32": no rounding at all. "half": pure 16-bit training, i.e. mixed compute but the weights
# themselves are stored in the half dtype (no float32 master copy), so small updates can be lost.
COMPUTE_PRECISIONS = ("mixed", "float32", "half")
DEFAULT_COMPUTE_PRECISION = "mixed"
_ONLY_MIXED_MESSAGE = (
    "only mixed precision is supported for training on the CS system (weights in float32, compute "
    "on 16-bit inputs with float32 accumulation); compute precision {mode!r} is available on target cpu"
)
_state = {"compute_precision": DEFAULT_COMPUTE_PRECISION}


def set_compute_precision(mode: str) -> None:
    """Select "mixed" (default), "float32" or "half"; on target cs only "mixed" is accepted."""
    if not isinstance(mode, str) or mode not in COMPUTE_PRECISIONS:
        raise UnknownNameError(f"unknown compute precision {mode!r}; known: {', '.join(COMPUTE_PRECISIONS)}")
    if mode != "mixed" and context.on_cs():
        raise PrecisionError(_ONLY_MIXED_MESSAGE.format(mode=mode))
    _state["compute_precision"] = mode


def compute_precision() -> str:
    """The compute precision that operations will use now."""
    return _state["compute_precision"]


def _checked_mode() -> str:
    """The current mode; a non-mixed mode chosen on cpu is refused once the target is cs."""
    mode = compute_precision()
    if mode != "mixed" and context.on_cs():
        raise PrecisionError(_ONLY_MIXED_MESSAGE.format(mode=mode))
    return mode


def compute_operand(array: NDArray[np.float32]) -> NDArray[np.float32]:
    """An operand as an operation reads it: rounded to the half dtype unless the mode is float32.

    Every engine operation calls this on its inputs, so the casts are inserted by the engine and
    never by the user.
    """
    if _checked_mode() == "float32":
        return np.asarray(array, dtype=np.float32)
    return quantize(array, context.half_dtype_name())


def stored_weights(array: NDArray[np.float32]) -> NDArray[np.float32]:
    """Updated weights as they are stored: float32 master weights, or half values in "half" mode."""
    if _checked_mode() == "half":
        return quantize(array, context.half_dtype_name())
    return array


@context.on_reset
def _reset() -> None:
    _state["compute_precision"] = DEFAULT_COMPUTE_PRECISION
