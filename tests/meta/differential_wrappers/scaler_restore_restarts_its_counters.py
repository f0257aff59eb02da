"""Planted bug: ``GradScaler.load_state_dict`` restores the loss scale but restarts the dynamic scaler's
counters, so a run resumed from a checkpoint grows its scale later than the uninterrupted run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "scaler-restore-restarts-its-counters 1.0"


class GradScaler(_GradScaler):
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._steps_since_rescale = self._overflows_since_rescale = 0  # planted: the saved counts are dropped


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
