"""Global runtime state of the reference engine: the target system and the 16-bit compute format.

The documents scope every limitation to the CS system; CPU and GPU runs support the full framework.
The engine therefore always knows its target, and every refusal asks it first. ``reset()`` puts the
engine back to its defaults so that conformance tests never see each other's state.
"""

from __future__ import annotations

from collections.abc import Callable

from csconform.errors import InvalidInputError
from csconform.interface.kit.package import TargetSwitch

TARGETS = ("cs", "cpu")
HALF_DTYPES = ("float16", "bfloat16", "cbfloat16")
DEFAULT_TARGET = "cs"
DEFAULT_HALF_DTYPE = "float16"

_target = TargetSwitch(TARGETS, DEFAULT_TARGET, "the reference engine")
_state = {"half_dtype": DEFAULT_HALF_DTYPE}
_reset_hooks: list[Callable[[], None]] = []

current_target = _target.current
"""The system the engine is emulating: ``"cs"`` (limitations apply) or ``"cpu"``."""
set_target = _target.set
use_target = _target.use


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
    _target.reset()
    _state["half_dtype"] = DEFAULT_HALF_DTYPE
    for hook in _reset_hooks:
        hook()
