"""Broken on purpose: on an iteration whose update() will double the scale, unscale_() already divides by
the doubled scale (breaks GRADSCALER-046, and GRADSCALER-012, which says unscale_ divides by the current
scale). Every other iteration, and the scale's trajectory, are right."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.amp import GradScaler as _GradScaler

_unscale = _GradScaler.unscale_


def _unscale_by_the_coming_scale(self, optimizer) -> None:
    growing = self.dynamic and self._steps_since_rescale + 1 > self.steps_per_increase
    if not growing or id(optimizer) in self._finite or id(optimizer) in self._stepped:
        _unscale(self, optimizer)
        return
    current = self._loss_scale
    self._loss_scale = min(2.0 * current, self.max_loss_scale)
    try:
        _unscale(self, optimizer)
    finally:
        self._loss_scale = current


_GradScaler.unscale_ = _unscale_by_the_coming_scale


def __getattr__(name: str):
    return getattr(_reference, name)
