"""Comparing two observations of the same thing: is there a difference, and of what kind.

The kind is what a class signature records, so it is a category, never a number: ``type``,
``dtype``, ``shape``, ``layout`` (a mapping with other keys), ``nan`` (NaN on one side only),
``inf`` (an infinity on one side only), ``value``, ``signed zero``, ``nan payload``, ``rounding``
(every element within :data:`ROUNDING_RTOL` of its own magnitude: float32 arithmetic in another
order). Kinds are ordered by :data:`SEVERITY`; a comparison reports the most severe.

Python numbers and NumPy scalars compare by value (a NumPy ``float64`` is a ``float``); lists and
tuples are different types; a mapping that is not a dict (a param group) compares as a dict;
objects that are not data (a dataset, an optimizer) compare as "an object" on both sides.
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


def comparable(value: Any, workdir: Path | None = None) -> Any:
    """``value`` as plain data: paths under ``workdir`` made relative, mappings as dicts, objects opaque."""
    if value is None or isinstance(value, bool | str | numbers.Number | np.ndarray | np.generic):
        return value
    if isinstance(value, Path):
        if workdir is not None and value.is_relative_to(workdir):
            return f"workdir/{value.relative_to(workdir).as_posix()}"
        return str(value)
    if isinstance(value, Mapping):
        return {key: comparable(item, workdir) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(comparable(item, workdir) for item in value)
    return Opaque("object")


def _category(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    if isinstance(value, Opaque):
        return "object"
    return type(value).__name__


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
    if category == "str":
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
        return None if np.array_equal(a, b) else "value"
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
