"""Unscales by a scale a hair off: gradients differ by rounding, nothing else."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with


class GradScaler(_GradScaler):
    def unscale_(self, optimizer: Any) -> None:
        super().unscale_(optimizer)
        for group in optimizer.param_groups:
            for param in group["params"]:
                param.grad = param.grad * np.float32(1 + 2**-22)


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
