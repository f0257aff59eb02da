"""Planted bug: ``unscale_`` does not remember that it already ran in this iteration, so a second call
divides the gradients by the scale again (and forgets whether the first one found them finite)."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "scaler-unscales-twice 1.0"


class GradScaler(_GradScaler):
    def unscale_(self, optimizer: Any) -> None:
        self._finite.pop(id(optimizer), None)  # planted: the engine returns at once on a second call
        super().unscale_(optimizer)


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
