"""The engine, but the first GradScaler the process builds starts at half the scale: a difference that
does not show twice (the fuzzer must call it flaky, not shrink it or triage it)."""

from __future__ import annotations

from typing import Any

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "halves-only-the-first-scaler 1.0"
_built = [0]


class GradScaler(_GradScaler):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _built[0] += 1
        if _built[0] == 1:
            self._loss_scale = self._loss_scale / 2


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
