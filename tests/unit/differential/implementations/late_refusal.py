"""``update(new_scale)`` crashes with a TypeError where the engine refuses the call by type."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with


class GradScaler(_GradScaler):
    def update(self, new_scale: Any = None) -> None:
        if new_scale is not None:
            raise TypeError("no new scale")
        super().update()


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
