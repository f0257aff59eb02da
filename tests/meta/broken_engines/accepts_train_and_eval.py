"""Broken on purpose: accepts mode "train_and_eval" on the CS system (breaks GRAPH-005)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import compiler as _compiler
from csconform.interface.kit import runs as _runs

_compiler.check_mode = _runs.check_mode  # the interface's modes, without the CS system's refusal


def __getattr__(name: str):
    return getattr(_reference, name)
