"""Broken on purpose: user hooks are accepted on cs (breaks ESTIMATOR-002)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.estimator import CerebrasEstimator as _Estimator


def _accept_hooks(self, hooks) -> None:
    return None


_Estimator.check_hooks = _accept_hooks


def __getattr__(name: str):
    return getattr(_reference, name)
