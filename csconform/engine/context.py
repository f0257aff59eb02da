"""Global runtime state of the reference engine: the target system and the 16-bit compute format.

The documents scope every limitation to the CS system; CPU and GPU runs support the full framework.
The engine therefore always knows its target, and every refusal asks it first. ``reset()`` puts the
engine back to its defaults so that conformance tests never see each other's state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from csconform.errors import InvalidInputError

TARGETS = ("cs", "cpu")
HALF_DTYPES = ("float16", "bfloat16", "cbfloat16")
DEFAULT_TARGET = "cs"
DEFAULT_HALF_DTYPE = "float16"

_state = {"target": DEFAULT_TARGET, "half_dtype": DEFAULT_HALF_DTYPE}
_reset_hooks: list[Callable[[], None]] = []


def current_target() -> str:
    """The system the engine is emulating: ``"cs"`` (limitations apply) or ``"cpu"``."""
    return _state["target"]


def set_target(name: str) -> None:
    if name not in TARGETS:
        raise InvalidInputError(f"unknown target {name!r}; known targets: {', '.join(TARGETS)}")
    _state["target"] = name


@contextmanager
def use_target(name: str) -> Iterator[str]:
    """Run a block on another target and restore the previous one afterwards."""
    previous = current_target()
    set_target(name)
    try:
        yield name
    finally:
        _state["target"] = previous


def on_cs() -> bool:
    return current_target() == "cs"


def half_dtype_name() -> str:
    """The 16-bit format used for compute: ``float16`` (default), ``bfloat16`` or ``cbfloat16``."""
    return _state["half_dtype"]


def set_half_dtype_name(name: str) -> None:
    if name not in HALF_DTYPES:
        raise InvalidInputError(f"unknown half dtype {name!r}; known: {', '.join(HALF_DTYPES)}")
    _state["half_dtype"] = name


def on_reset(hook: Callable[[], None]) -> Callable[[], None]:
    """Register a function that clears a module's own global state on ``reset()``."""
    if hook not in _reset_hooks:
        _reset_hooks.append(hook)
    return hook


def reset() -> None:
    """Restore the defaults: target cs, half dtype float16, and every module's own state."""
    _state["target"] = DEFAULT_TARGET
    _state["half_dtype"] = DEFAULT_HALF_DTYPE
    for hook in _reset_hooks:
        hook()
