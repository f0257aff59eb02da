"""Broken on purpose: pipelined mode accepts models larger than the wafer (breaks EXEC-001, EXEC-010)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import execution as _execution


def _everything_fits(footprint, batch_size, system) -> None:
    return None


_execution.check_pipelined_fits = _everything_fits


def __getattr__(name: str):
    return getattr(_reference, name)
