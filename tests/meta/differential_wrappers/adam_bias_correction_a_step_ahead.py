"""Planted bug: Adam's bias correction uses the step after the one being taken (``1 - beta ** (t + 1)``),
so every update is a little too small; the moments and the stored step are right."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.engine.optim.optimizers import Adam as _Adam
from csconform.engine.optim.optimizers import AdamW as _AdamW
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "adam-bias-correction-a-step-ahead 1.0"


class _AheadOfItsStep(_Adam):
    def _update(self, data: Any, grad: Any, state: dict[str, Any], lr: Any, group: Any) -> Any:
        taken = int(state.get("step", 0))
        new_data, new_state = super()._update(data, grad, {**state, "step": taken + 1}, lr, group)  # planted
        return new_data, {**new_state, "step": np.int64(taken + 1)}


class Adam(_AheadOfItsStep):
    pass


class AdamW(_AheadOfItsStep, _AdamW):
    pass


optim = submodule_with("optim", Adam=Adam, AdamW=AdamW)


def __getattr__(name: str) -> Any:
    return delegate(name)
