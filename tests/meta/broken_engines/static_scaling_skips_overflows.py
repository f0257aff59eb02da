"""Broken on purpose: a static loss scale skips steps on inf/NaN gradients (breaks GRADSCALER-014)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.amp import GradScaler as _GradScaler

_unscale = _GradScaler.unscale_


def _unscale_and_check_in_static_mode_too(self, optimizer) -> None:
    _unscale(self, optimizer)
    if not self.dynamic:
        self._finite[id(optimizer)] = self.clip_gradients_and_return_isfinite(optimizer)


_GradScaler.unscale_ = _unscale_and_check_in_static_mode_too


def __getattr__(name: str):
    return getattr(_reference, name)
