"""Broken on purpose: update() raises NonRecoverableNaNError at the minimum scale (breaks GRADSCALER-043).

It is the reference engine before public-facts#GradScaler was read right: the GradScaler itself gave up on an
overflow at min_loss_scale, where it must only clamp and leave the decision to the training loop.
"""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.amp import GradScaler as _GradScaler
from csconform.errors import NonRecoverableNaNError

_update = _GradScaler.update


def _update_giving_up(self, new_scale=None) -> None:
    overflow_at_minimum = self.is_at_minimum() and bool(self._finite) and not all(self._finite.values())
    _update(self, new_scale)
    if overflow_at_minimum:
        raise NonRecoverableNaNError("gradients are still non-finite although the loss scale is at its minimum")


_GradScaler.update = _update_giving_up


def __getattr__(name: str):
    return getattr(_reference, name)
