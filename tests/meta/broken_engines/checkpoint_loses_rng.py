"""Broken on purpose: checkpoints lose the layers' random state (breaks RUNNER-006, bit-exact resume)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import runner as _runner


def _no_random_state(model):
    return {}


_runner._module_rng_states = _no_random_state


def __getattr__(name: str):
    return getattr(_reference, name)
