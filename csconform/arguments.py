"""Argument checks for the whole package: one function per kind of argument, one message per kind.

A public function or constructor checks what it is given before using it, so a wrong value is a
typed error naming the argument and what it takes, never a TypeError, an OverflowError or an
AttributeError from deep inside the package or NumPy. This module is the one place those checks
live (the way Hypothesis keeps ``check_type`` and ``check_valid_*`` in one validation module): the
reference engine, the adapters, the implementation kit and the config reader all call it, so that
one kind of argument is refused the same way, with the same message, wherever it enters.

Each ``check_*`` returns the value (converted where that is the point: an ``int``, a ``float``, a
``Path``, a float32 array), so it reads as an assignment at the top of a function. It raises
``error``, :class:`~csconform.errors.InvalidInputError` unless the caller's domain has its own
refusal (a GradScaler's arguments are a ``GradScalerConfigError``). Code that reports a finding
instead of raising (the config checks of ``csconform validate``) uses the predicates behind them
(``is_integer``, ``is_real``, ``is_finite_real``) and ``integer_problem``, the integer check's
refusal as text.

Integers are range-checked where they enter: an integer argument is at most ``INT64_MAX`` unless the
caller sets another bound, since the package computes on it with NumPy, whose integers are 64 bits
(a step, a warm-up length or a milestone of 2**63 would otherwise end in NumPy's OverflowError).

The command-line options' types (``positive_seconds``) are here too; they raise argparse's own
``ArgumentTypeError``, so a bad option is a usage error (exit 2) before anything runs.
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from csconform.errors import CsConformError, InvalidInputError

T = TypeVar("T")

INT64_MAX = 2**63 - 1
"""The largest integer argument taken unless a check names another bound: NumPy's int64."""

MAX_SECONDS = 7 * 24 * 3600.0
"""Largest time limit or timeout accepted on the command line: a week."""


def is_integer(value: object) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value: object) -> bool:
    """A Python or NumPy real number (integers included), not a bool; NaN and infinities included."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def is_finite_real(value: object) -> bool:
    """A real number (not a bool) that is neither NaN nor an infinity."""
    return is_real(value) and math.isfinite(value)  # type: ignore[arg-type]


def _kind(value: object) -> str:
    return type(value).__name__


# --- what an argument is ---------------------------------------------------------------------------


def check_type(
    name: str,
    value: object,
    kind: type[T] | tuple[type, ...],
    what: str,
    *,
    error: type[CsConformError] = InvalidInputError,
) -> T:
    """``value`` if it is a ``kind`` (described as ``what`` in the refusal)."""
    if not isinstance(value, kind):
        raise error(f"{name} must be {what}, got {_kind(value)}")
    return value  # type: ignore[return-value]


def check_callable(name: str, value: object) -> Callable[..., Any]:
    """``value`` if it can be called."""
    if not callable(value):
        raise InvalidInputError(f"{name} must be a function (callable), got {_kind(value)}")
    return value


def check_choice(name: str, value: object, options: Collection[str]) -> str:
    """``value`` if it is one of the strings ``options``."""
    if not isinstance(value, str) or value not in options:
        shown = repr(value) if isinstance(value, str | int | float | None) else f"a {_kind(value)}"
        raise InvalidInputError(f"{name} must be one of {', '.join(map(repr, options))}; got {shown}")
    return value


def check_text(name: str, value: object) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
    return value


def check_mapping(name: str, value: object) -> Mapping[Any, Any]:
    """``value`` if it is a mapping (a dict, a state dict, ...)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping (a dict), got {_kind(value)}")
    return value


def check_path(name: str, value: object) -> Path:
    """``value`` as a Path, if it is a string or an os.PathLike naming one in text without NUL characters."""
    named = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(named, str) or not named or "\x00" in named:
        raise InvalidInputError(f"{name} must be a file path (non-empty text without NUL characters), got {value!r}")
    return Path(named)


def check_flag(name: str, value: object) -> bool:
    """``value`` if it is a bool (NumPy's included)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# --- numbers ---------------------------------------------------------------------------------------


def _integers(minimum: int | None, maximum: int | None, value: object) -> str:
    """The integers a check takes, as its refusal says it: "a positive integer", "an integer >= 2 up to 9"."""
    wanted = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer >= {minimum}"
    )
    if maximum is None or (maximum == INT64_MAX and not (is_integer(value) and int(value) > INT64_MAX)):  # type: ignore[call-overload]
        return wanted
    if maximum == INT64_MAX:
        return f"{wanted} that fits in int64 (up to 2**63 - 1)"
    return f"{wanted} up to {maximum}"


def integer_problem(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = INT64_MAX
) -> str | None:
    """What is wrong with ``value`` as an integer (not a bool) in ``minimum..maximum``, in the words of
    :func:`check_integer`'s refusal; None when nothing is (for code that reports instead of raising)."""
    if (
        not is_integer(value)
        or (minimum is not None and int(value) < minimum)  # type: ignore[call-overload]
        or (maximum is not None and int(value) > maximum)  # type: ignore[call-overload]
    ):
        return f"{name} must be {_integers(minimum, maximum, value)}, got {value!r}"
    return None


def check_integer(
    name: str,
    value: object,
    *,
    minimum: int | None = None,
    maximum: int | None = INT64_MAX,
    error: type[CsConformError] = InvalidInputError,
) -> int:
    """``value`` as an int, if it is an integer (not a bool) in ``minimum..maximum``; ``maximum=None``
    only where the value never becomes a NumPy integer (a seed, which NumPy takes of any size)."""
    problem = integer_problem(name, value, minimum=minimum, maximum=maximum)
    if problem is not None:
        raise error(problem)
    return int(value)  # type: ignore[call-overload]


def _reals(
    finite: bool, minimum: float | None, maximum: float | None, exclusive_minimum: bool, exclusive_maximum: bool
) -> str:
    """The numbers a check takes, as its refusal says it: "a finite number > 0", "a number in [0, 1)"."""
    wanted = "a finite number" if finite else "a number"
    if minimum is not None and maximum is not None:
        opening, closing = "(" if exclusive_minimum else "[", ")" if exclusive_maximum else "]"
        return f"{wanted} in {opening}{minimum:g}, {maximum:g}{closing}"
    if minimum is not None:
        return f"{wanted} {'>' if exclusive_minimum else '>='} {minimum:g}"
    if maximum is not None:
        return f"{wanted} {'<' if exclusive_maximum else '<='} {maximum:g}"
    return wanted


def check_real(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    finite: bool = True,
    error: type[CsConformError] = InvalidInputError,
) -> float:
    """``value`` as a float, if it is a real number (not a bool, never NaN) within the bounds given;
    ``finite=False`` also takes an infinity the bounds allow."""
    number = float(value) if is_real(value) else math.nan  # type: ignore[arg-type]
    taken = (
        not math.isnan(number)
        and (not finite or math.isfinite(number))
        and (minimum is None or number > minimum or (number == minimum and not exclusive_minimum))
        and (maximum is None or number < maximum or (number == maximum and not exclusive_maximum))
    )
    if not taken:
        wanted = _reals(finite, minimum, maximum, exclusive_minimum, exclusive_maximum)
        raise error(f"{name} must be {wanted}, got {value!r}")
    return number


# --- arrays ----------------------------------------------------------------------------------------


def check_real_array(name: str, value: object, last_dim: int | None = None) -> NDArray[Any]:
    """``value`` as an array (its own dtype), if it holds real numbers (finite or not), optionally
    with a required last dimension."""
    try:
        values = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list, an object NumPy cannot hold
        values = None
    if values is None or values.dtype.kind not in "biuf":
        shown = _kind(value) if values is None else f"dtype {values.dtype}"
        raise InvalidInputError(f"{name} must be an array of real numbers, got {shown}")
    if last_dim is not None and (values.ndim == 0 or values.shape[-1] != last_dim):
        raise InvalidInputError(f"{name} must have last dimension {last_dim}, got shape {values.shape}")
    return values


def check_float_array(name: str, value: object, last_dim: int | None = None) -> NDArray[np.float32]:
    """``check_real_array`` as float32: what a layer computes on."""
    return check_real_array(name, value, last_dim).astype(np.float32, copy=False)


def check_integer_array(name: str, value: object) -> NDArray[np.integer]:
    """``value`` as an array, if it holds integers (class indices, token ids)."""
    try:
        values = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list, an object NumPy cannot hold
        values = None
    if values is None or values.dtype.kind not in "iu":
        shown = _kind(value) if values is None else f"dtype {values.dtype}"
        raise InvalidInputError(f"{name} must be an array of integers, got {shown}")
    return values


# --- command-line options --------------------------------------------------------------------------


def positive_seconds(text: str) -> float:
    """A number of seconds on the command line: finite, > 0 and at most :data:`MAX_SECONDS`."""
    try:
        return check_real("a number of seconds", float(text), minimum=0.0, maximum=MAX_SECONDS, exclusive_minimum=True)
    except (ValueError, InvalidInputError):
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds up to {MAX_SECONDS:g} (a week), got {text!r}"
        ) from None


def positive_count(text: str) -> int:
    """A whole number of at least 1 on the command line (steps, iterations), at most int64."""
    try:
        return check_integer("a count", int(text), minimum=1)
    except (ValueError, InvalidInputError):
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}") from None
