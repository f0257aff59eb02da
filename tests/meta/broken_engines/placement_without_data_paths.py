"""Broken on purpose: placed regions are not connected by data paths (breaks COMPILE-009)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import compiler as _compiler


def _no_paths(placement) -> tuple:
    return ()


_compiler.connect_regions = _no_paths


def __getattr__(name: str):
    return getattr(_reference, name)
