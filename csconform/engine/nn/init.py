"""Weight initialisation with a reproducible random generator.

Layers draw their initial weights from one module-level generator, reseeded by ``manual_seed`` and by
``engine.reset()``, so a run (or a conformance test) builds the same model every time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from csconform.arguments import check_integer
from csconform.engine import context
from csconform.engine.nn.parameter import weight_shape

DEFAULT_SEED = 0
_generator = [np.random.default_rng(DEFAULT_SEED)]


def manual_seed(seed: int) -> None:
    _generator[0] = np.random.default_rng(check_integer("seed", seed, minimum=0, maximum=None))


def uniform(shape: tuple[int, ...], bound: float) -> NDArray[np.float32]:
    """Values drawn from U(-bound, bound), as float32."""
    weight_shape("weight", *shape)
    return _generator[0].uniform(-bound, bound, size=shape).astype(np.float32)


def normal(shape: tuple[int, ...], std: float) -> NDArray[np.float32]:
    weight_shape("weight", *shape)
    return (_generator[0].standard_normal(size=shape) * std).astype(np.float32)


@context.on_reset
def _reset() -> None:
    manual_seed(DEFAULT_SEED)
