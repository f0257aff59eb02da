"""The engine, but a GradScaler starts at half the scale the engine's starts at."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "scaler-starts-halved 1.0"


class GradScaler(_GradScaler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loss_scale = self._loss_scale / 2


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
