"""Planted bug: ``MultiStepLR`` counts the milestones before a step, not those at or before it, so each
decay starts one step after its milestone."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.engine.optim.lr_scheduler import MultiStepLR as _MultiStepLR
from csconform.engine.optim.lr_scheduler import _scaled_power
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "milestone-applied-a-step-late 1.0"


class MultiStepLR(_MultiStepLR):
    def _rates(self, steps: Any) -> Any:
        passed = np.searchsorted(np.asarray(self.milestones, dtype=np.int64), steps, side="left")  # planted: "right"
        return _scaled_power(self.initial_learning_rate, self.gamma, passed)


optim = submodule_with("optim", lr_scheduler=submodule_with("optim.lr_scheduler", MultiStepLR=MultiStepLR))


def __getattr__(name: str) -> Any:
    return delegate(name)
