"""Broken on purpose: the pipelined program does not carry the learning-rate schedule (breaks LR-022)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import compiler as _compiler

_compile_graph = _compiler.compile_graph


def _compile_without_the_schedule(graph, **options):
    options.pop("learning_rate_schedules", None)
    return _compile_graph(graph, **options)


_compiler.compile_graph = _compile_without_the_schedule


def __getattr__(name: str):
    return getattr(_reference, name)
