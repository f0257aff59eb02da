"""Planted bug: ``InverseSquareRootDecayLR`` counts steps from 1 (PyTorch's ``last_epoch + 1``), so its
warm-up ends a step early and every later rate is the next step's."""

from __future__ import annotations

from typing import Any

from csconform.engine.optim.lr_scheduler import InverseSquareRootDecayLR as _InverseSquareRootDecayLR
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "warmup-counts-steps-from-one 1.0"


class InverseSquareRootDecayLR(_InverseSquareRootDecayLR):
    def _rates(self, steps: Any) -> Any:
        return super()._rates(steps + 1)  # planted: the engine's step t is update number t, from 0


optim = submodule_with(
    "optim", lr_scheduler=submodule_with("optim.lr_scheduler", InverseSquareRootDecayLR=InverseSquareRootDecayLR)
)


def __getattr__(name: str) -> Any:
    return delegate(name)
