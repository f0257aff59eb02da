"""Broken on purpose: accepts mode "train_and_eval" on the CS system (breaks GRAPH-005)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import compiler as _compiler
from csconform.errors import InvalidInputError


def _check_mode_without_the_cs_refusal(mode: str) -> None:
    if mode not in _compiler.MODES:
        raise InvalidInputError(f"unknown mode {mode!r}; known modes: {', '.join(_compiler.MODES)}")


_compiler.check_mode = _check_mode_without_the_cs_refusal


def __getattr__(name: str):
    return getattr(_reference, name)
