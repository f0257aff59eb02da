"""What compiling produces: the kernel mapping of ``validate_only`` and the full artifact a system runs.

Both the compiler (:mod:`csconform.engine.compiler`), which makes them, and a system
(:mod:`csconform.engine.system`), which is programmed with an artifact and refuses one bound to
another system, read them; they live here so that neither of the two imports the other's module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from csconform.engine.graph import Graph


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of ``validate_only``: the kernel chosen for every operation, nothing placed."""

    graph: Graph
    mode: str
    kernels: tuple[str, ...]


@dataclass(frozen=True)
class CompiledArtifact:
    """A full compile: the graph, its kernels, the system it is bound to, and (when asked for) the
    placement of its kernels on the wafer with the modeled throughput from csconform.perf and the
    data paths between the placed regions.

    ``learning_rate_schedules`` holds, for a pipelined training program, the schedule of every
    optimizer param group (a function of the global step), programmed into the fabric with the graph.
    """

    graph: Graph
    mode: str
    kernels: tuple[str, ...]
    system_id: str
    placement: list[dict[str, Any]] | None = None
    modeled_samples_per_s: float | None = None
    execution: str = "pipelined"
    data_paths: tuple[dict[str, Any], ...] = ()
    learning_rate_schedules: tuple[Any, ...] = ()
