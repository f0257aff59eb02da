"""Planted bug: a shuffle stage starts its random stream afresh on every pass over its input, so behind a
``repeat`` every epoch comes out in the first epoch's order (the engine's stream runs on across epochs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.meta.differential_wrappers import delegate, fresh_submodule

VERSION = "shuffle-repeats-every-epoch 1.0"

data = fresh_submodule("data", __name__)


class _StageRngs(data._StageRngs):
    def for_stage(self, stage: Any) -> np.random.Generator:
        generator = super().for_stage(stage)
        return np.random.default_rng(generator.bit_generator.seed_seq)  # planted: the engine returns `generator`


data._StageRngs = _StageRngs


def __getattr__(name: str) -> Any:
    return delegate(name)
