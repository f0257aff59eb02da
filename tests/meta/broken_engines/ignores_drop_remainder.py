"""Broken on purpose: the estimator accepts batches without drop_remainder on cs (breaks INPUT-008)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.estimator import CerebrasEstimator as _Estimator


def _accept_any_batching(self, dataset) -> None:
    return None


_Estimator.check_fixed_batch_size = _accept_any_batching


def __getattr__(name: str):
    return getattr(_reference, name)
