"""Capability ``graph`` (tracing): what the CPU backend of cerebras.pytorch can show of a step's graph.

Nothing: the package builds the graph of a step only on its CS backend, where ``cstorch.trace`` runs
the step on lazy tensors and the appliance compiles what they recorded (backend/ltc_backend.py). On
the CPU backend ``cstorch.trace`` runs the step eagerly (core/compile.py:214-237: the traced context
is entered only ``if backend.is_csx``), and no graph, operation list or fingerprint exists to read.
So ``trace`` and ``record`` report ``Unsupported`` with that reason; the adapter does not record
operations itself, which would check the adapter instead of the package. compiler.py says the same
of compiling and programming a system.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from csconform.errors import Unsupported

NO_GRAPH = (
    "cerebras.pytorch builds a step's graph only on its CS backend (lazy tensors traced by cstorch.trace and "
    "compiled by the appliance, backend/ltc_backend.py); on the CPU backend cstorch.trace runs the step eagerly "
    "and records no graph (core/compile.py:214-237)"
)


def trace(step: Callable[..., Any], *args: Any, **kwargs: Any) -> NoReturn:
    raise Unsupported(NO_GRAPH)


def record(name: str, *inputs: Any) -> NoReturn:
    raise Unsupported(NO_GRAPH)
