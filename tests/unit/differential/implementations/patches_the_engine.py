"""Patches ``csconform.engine`` in place, as tests/meta/broken_engines do: every GradScaler of the
engine in this process reports a scale of zero. A and B in one process would both change."""

from __future__ import annotations

import csconform.engine as _engine
from csconform.engine import CAPABILITIES, TARGETS, current_target, reset, set_target, use_target  # noqa: F401

_engine.amp.GradScaler.get_scale = lambda self: 0.0  # type: ignore[method-assign]


def __getattr__(name: str) -> object:
    return getattr(_engine, name)
