"""``unscale_`` cannot be shown on this backend (Unsupported)."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from csconform.errors import Unsupported
from tests.meta.differential_wrappers import delegate, submodule_with


class GradScaler(_GradScaler):
    def unscale_(self, optimizer: Any) -> None:
        raise Unsupported("unscale_ cannot be shown on this backend")


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
