"""Planted bug: AdamW adds its weight decay to the gradient, as Adam's L2 term, instead of decoupling it
from the adaptive update."""

from __future__ import annotations

from typing import Any

from csconform.engine.optim.optimizers import AdamW as _AdamW
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "adamw-decays-like-adam 1.0"


class AdamW(_AdamW):
    decoupled_weight_decay = False  # planted: the engine's AdamW decouples it


optim = submodule_with("optim", AdamW=AdamW)


def __getattr__(name: str) -> Any:
    return delegate(name)
