"""Planted bug: when too many iterations overflow, the dynamic scale is halved but the count of clean
iterations since the last change is not reset, so the scale grows back sooner than it should."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from csconform.engine.amp import _float32
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "scaler-keeps-counting-after-an-overflow 1.0"


class GradScaler(_GradScaler):
    def _apply_dls_rule(self, finite: bool) -> None:
        self._steps_since_rescale += 1
        self._overflows_since_rescale += 0 if finite else 1
        if self._overflows_since_rescale / self._steps_since_rescale > self.overflow_tolerance:
            self._loss_scale /= 2.0
            self._overflows_since_rescale = 0  # planted: _steps_since_rescale is not reset with it
        if self._steps_since_rescale > self.steps_per_increase:
            self._loss_scale *= 2.0
            self._steps_since_rescale = self._overflows_since_rescale = 0
        self._loss_scale = max(min(self._loss_scale, _float32(self.max_loss_scale)), _float32(self.min_loss_scale))


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
