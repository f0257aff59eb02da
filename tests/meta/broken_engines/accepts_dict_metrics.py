"""Broken on purpose: an eval metric may return a dict of values on cs (breaks METRICS-001)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import metrics as _metrics

_original_check = _metrics.check_result


def _check_letting_dicts_through(name, value):
    if isinstance(value, dict):
        return value
    return _original_check(name, value)


_metrics.check_result = _check_letting_dicts_through


def __getattr__(name: str):
    return getattr(_reference, name)
