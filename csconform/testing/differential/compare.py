"""Comparing two observations of the same thing: is there a difference, and of what kind.

The kind is what a class signature records, so it is a category, never a number: ``type``,
``dtype``, ``shape``, ``layout`` (a mapping with other keys), ``nan`` (NaN on one side only),
``inf`` (an infinity on one side only), ``value``, ``signed zero``, ``nan payload``, ``rounding``
(every element within :data:`ROUNDING_RTOL` of its own magnitude: float32 arithmetic in another
order). Kinds are ordered by :data:`SEVERITY`; a comparison reports the most severe.

Python numbers and NumPy scalars compare by value (a NumPy ``float64`` is a ``float``); lists and
tuples are different types; a mapping that is not a dict (a param group) compares as a dict;
objects that are not data (a dataset, an optimizer) compare as "an object" on both sides. Both
functions are total: whatever an implementation returns, they answer without raising.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROUNDING_RTOL = 1e-5
"""Differences up to this fraction of an element's magnitude are rounding (about 80 float32 ulps)."""

SEVERITY = ("layout", "rounding", "nan payload", "signed zero", "value", "inf", "nan", "shape", "dtype", "type")
"""Kinds from the least to the most severe."""

DIVERGENT = frozenset({"value", "inf", "nan", "shape", "dtype", "type"})
"""Kinds after which two runs no longer compute the same thing (the program stops comparing)."""


class Opaque:
    """An object that is not data; two of them compare equal."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind}>"


MAX_DEPTH = 32
"""Containers nested deeper than this are compared as an object (a list that holds itself has no end)."""


def comparable(value: Any, workdir: Path | None = None, depth: int = 0) -> Any:
    """``value`` as plain data that can cross a process boundary: numbers as Python or NumPy numbers,
    paths under ``workdir`` made relative, mappings as dicts, tuples (a named tuple too) as tuples,
    anything else (or anything whose conversion raises) as an object. Total: it never raises."""
    try:
        return _plain(value, workdir, depth)
    except Exception as error:  # noqa: BLE001 - an implementation's value may misbehave in any way
        return Opaque(f"object whose conversion raised {type(error).__name__}")


def _plain(value: Any, workdir: Path | None, depth: int) -> Any:
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return value
    if isinstance(value, np.generic):
        if value.dtype.kind in "biufc":
            return value
        return np.asarray(value) if value.dtype.kind in "Mm" else Opaque(f"numpy {value.dtype}")
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind in "biufcUSMm" else Opaque(f"array of {value.dtype}")
    if isinstance(value, bool | str):  # a subclass: its data, not its behaviour
        return bool(value) if isinstance(value, bool) else str.__str__(value)
    if isinstance(value, numbers.Number):
        return _number(value)
    if isinstance(value, Path):
        if workdir is not None and value.is_relative_to(workdir):
            return f"workdir/{value.relative_to(workdir).as_posix()}"
        return str(value)
    if depth >= MAX_DEPTH:
        return Opaque("object nested too deep")
    if isinstance(value, Mapping):
        return {_key(key): comparable(item, workdir, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item, workdir, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(comparable(item, workdir, depth + 1) for item in value)
    return Opaque(type(value).__name__)


def _number(value: numbers.Number) -> Any:
    """A number of another type (a Fraction, a Decimal) as the Python number it equals."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return complex(value)  # type: ignore[call-overload]


def _key(key: Any) -> Any:
    """A mapping key as data: a plain key as is, any other as its type name."""
    if key is None or type(key) in (bool, int, float, str):
        return key
    return f"<key of type {type(key).__name__}>"


def _category(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, str | bytes):
        return "str" if isinstance(value, str) else "bytes"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    return "object"  # an Opaque, or a value that did not go through comparable


def worst(kinds: list[str | None]) -> str | None:
    """The most severe of some kinds (None: no difference)."""
    present = [kind for kind in kinds if kind]
    return max(present, key=SEVERITY.index) if present else None


def difference(a: Any, b: Any, nan_payloads: bool = True) -> str | None:
    """The kind of the most severe difference between two comparable values, or None.

    ``nan_payloads``: whether two NaNs with different bits differ (the payload of a NaN that arithmetic
    made is the hardware's; the payload a conversion or a round trip keeps is an observable).
    """
    category = _category(a)
    if category != _category(b):
        return "type"
    if category in ("None", "object"):
        return None
    if category == "bool":
        return None if bool(a) == bool(b) else "value"
    if category in ("str", "bytes"):
        return None if a == b else "value"
    if category == "number":
        return _numbers(a, b)
    if category == "array":
        return _arrays(a, b, nan_payloads)
    if category == "dict":
        kinds = [difference(a[key], b[key], nan_payloads) for key in a if key in b]
        if set(a) != set(b):
            kinds.append("layout")
        return worst(kinds)
    if len(a) != len(b):
        return "shape"
    return worst([difference(x, y, nan_payloads) for x, y in zip(a, b, strict=True)])


def _numbers(a: Any, b: Any) -> str | None:
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return None if int(a) == int(b) else "value"
    x, y = complex(a), complex(b)
    if x.imag or y.imag:
        return None if x == y else "value"
    return _floats(np.array([x.real]), np.array([y.real]))


def _arrays(a: np.ndarray, b: np.ndarray, nan_payloads: bool) -> str | None:
    if a.dtype != b.dtype:
        return "dtype"
    if a.shape != b.shape:
        return "shape"
    if a.dtype.kind not in "fc":
        return None if np.array_equal(a, b, equal_nan=a.dtype.kind in "Mm") else "value"
    kind = _floats(a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1))
    if kind is None and nan_payloads and a.dtype.kind == "f" and a.size:
        bits = a.view(f"u{a.itemsize}") != b.view(f"u{b.itemsize}")
        if np.any(bits & np.isnan(a)):
            return "nan payload"
    return kind


def _floats(a: np.ndarray, b: np.ndarray) -> str | None:
    """Element-wise float64 values: the most severe kind of difference."""
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if np.any(nan_a != nan_b):
        return "nan"
    finite = ~nan_a
    x, y = a[finite], b[finite]
    if np.any(np.isinf(x) != np.isinf(y)) or np.any(np.isinf(x) & (x != y)):
        return "inf"
    if np.array_equal(x, y):
        if np.any(np.signbit(x) != np.signbit(y)):
            return "signed zero"
        return None
    # element by element: a difference is rounding only against the magnitude of the element it is
    # in (an error of 1% in a small element is not rounding because a huge one sits beside it)
    finite = np.isfinite(x)
    magnitude = np.maximum(np.abs(x[finite]), np.abs(y[finite]))
    if np.all(np.abs(x[finite] - y[finite]) <= ROUNDING_RTOL * magnitude):
        return "rounding"
    return "value"
