"""Broken on purpose: step closures get the live arrays, not copies taken at the call (breaks EXECUTOR-006)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import executor as _executor


def _no_snapshot(value):
    return value


_executor._snapshot = _no_snapshot


def __getattr__(name: str):
    return getattr(_reference, name)
