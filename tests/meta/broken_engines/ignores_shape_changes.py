"""Broken on purpose: on the CS system a step whose shapes changed keeps running (breaks GRAPH-001).

Changes of operation or dtype are still refused; only the input shapes are ignored.
"""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine import context as _context
from csconform.engine.system import System as _System

_original_check = _System.check_step_graph


def _check_ignoring_shapes(self, graph):
    if self.program is not None and _context.on_cs():
        compiled = [(op.name, op.input_dtypes) for op in self.program.graph.ops]
        if compiled == [(op.name, op.input_dtypes) for op in graph.ops]:
            return False
    return _original_check(self, graph)


_System.check_step_graph = _check_ignoring_shapes


def __getattr__(name: str):
    return getattr(_reference, name)
