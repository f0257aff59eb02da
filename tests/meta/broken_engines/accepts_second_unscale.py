"""Broken on purpose: unscale_() twice in one iteration divides the gradients again (breaks GRADSCALER-036)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.amp import GradScaler as _GradScaler

_unscale = _GradScaler.unscale_


def _unscale_again(self, optimizer) -> None:
    if id(optimizer) not in self._stepped:  # unscale_() after step() is still refused
        self._finite.pop(id(optimizer), None)
    _unscale(self, optimizer)


_GradScaler.unscale_ = _unscale_again


def __getattr__(name: str):
    return getattr(_reference, name)
