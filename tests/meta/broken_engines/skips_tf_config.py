"""Broken on purpose: training on cs without TF_CONFIG is accepted (breaks ESTIMATOR-014, -015)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.estimator_config import CSRunConfig as _Config


def _no_tf_config_check(self, env) -> None:
    return None


_Config.check_tf_config = _no_tf_config_check


def __getattr__(name: str):
    return getattr(_reference, name)
