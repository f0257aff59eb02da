"""Argument checks at the engine's public boundary, shared by every module.

A public function or constructor checks the arguments a user passes before using them, so a wrong
type is an :class:`~csconform.errors.InvalidInputError` naming the argument and what it takes, not
a TypeError or AttributeError from deep inside the engine or NumPy. Each check returns the value
(converted where that is the point, e.g. a path), so it reads as an assignment at the top of the
function. The layers' own checks (arrays, sizes, probabilities) are in :mod:`csconform.engine.nn.checks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, TypeVar

from csconform.errors import InvalidInputError

T = TypeVar("T")


def _kind(value: object) -> str:
    return type(value).__name__


def instance(name: str, value: object, kind: type[T] | tuple[type, ...], what: str) -> T:
    """``value`` if it is a ``kind`` (described as ``what`` in the refusal)."""
    if not isinstance(value, kind):
        raise InvalidInputError(f"{name} must be {what}, got {_kind(value)}")
    return value  # type: ignore[return-value]


def function(name: str, value: object) -> Callable[..., Any]:
    """``value`` if it can be called."""
    if not callable(value):
        raise InvalidInputError(f"{name} must be a function (callable), got {_kind(value)}")
    return value


def choice(name: str, value: object, options: Collection[str]) -> str:
    """``value`` if it is one of the strings ``options``."""
    if not isinstance(value, str) or value not in options:
        shown = repr(value) if isinstance(value, str | int | float | None) else f"a {_kind(value)}"
        raise InvalidInputError(f"{name} must be one of {', '.join(map(repr, options))}; got {shown}")
    return value


def text(name: str, value: object) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
    return value


def mapping(name: str, value: object) -> Mapping[Any, Any]:
    """``value`` if it is a mapping (a dict, a state dict, ...)."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping (a dict), got {_kind(value)}")
    return value


def path(name: str, value: object) -> Path:
    """``value`` as a Path, if it is a string or an os.PathLike naming one."""
    if not isinstance(value, str | os.PathLike) or not os.fspath(value):
        raise InvalidInputError(f"{name} must be a file path (a string or a Path), got {value!r}")
    if isinstance(os.fspath(value), bytes) or "\x00" in os.fspath(value):
        raise InvalidInputError(f"{name} must be a file path of text without NUL characters, got {value!r}")
    return Path(os.fspath(value))
