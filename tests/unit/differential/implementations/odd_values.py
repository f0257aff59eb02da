"""``GradScaler.get_scale`` returns values that are hard to compare, chosen by the scale it holds:
2: a two-field named tuple, 3: an object whose ``repr`` and ``==`` raise, 4: a datetime64, 8: a list
that holds itself; any other scale is the engine's."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from csconform.engine.amp import GradScaler as _GradScaler
from tests.meta.differential_wrappers import delegate, submodule_with

Scale = namedtuple("Scale", "mantissa exponent")


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no ==")

    __hash__ = object.__hash__


class GradScaler(_GradScaler):
    def get_scale(self) -> Any:
        scale = float(super().get_scale())
        if scale == 2.0:
            return Scale(1.0, 1)
        if scale == 3.0:
            return Hostile()
        if scale == 4.0:
            return np.datetime64("2026-11-28")
        if scale == 8.0:
            itself: list[Any] = [scale]
            itself.append(itself)
            return itself
        return scale


amp = submodule_with("amp", GradScaler=GradScaler)


def __getattr__(name: str) -> Any:
    return delegate(name)
