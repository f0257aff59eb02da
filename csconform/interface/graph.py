"""Capability ``graph``: tracing a step into a static graph and compiling it for a system.

pytorch-limitations#Static Graphs: the system is programmed once, so the graph must not change
between iterations, and only the modes "train" and "eval" exist. pipelined-execution#Layer
pipelined mode: the compiler maps each operation to a supported kernel (``validate_only``) and then
places them (``compile_only``). estimator-limitations#Compilation differences: an artifact compiled
for one system is refused by another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Graph(Protocol):
    """A traced step: its operations with their input shapes and dtypes."""

    ops: Any

    def fingerprint(self) -> str: ...

    def op_names(self) -> tuple[str, ...]: ...


class GraphModule(Protocol):
    """``engine.graph``"""

    def trace(self, step: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Graph, Any]:
        """Run ``step`` once, recording its operations; return the graph and the step's result."""

    def record(self, name: str, *inputs: Any) -> None:
        """Record an operation by name on the graph being traced (a no-op outside a trace)."""


class System(Protocol):
    """One CS system that can be programmed with a compiled artifact."""

    system_id: str
    program: Any
    """The artifact it was last programmed with, or None."""
    programs_loaded: int

    def __init__(self, system_id: str = "cs-0", wafer: str = "WSE-2", installation: str = "appliance") -> None: ...

    def load(self, artifact: Any) -> None: ...


_System = System  # the Protocol, under a name the module Protocol's attribute does not shadow


class CompilerModule(Protocol):
    """``engine.compiler``"""

    System: type[_System]

    def compile_graph(
        self,
        graph: Graph,
        *,
        mode: str = "train",
        system: _System | None = None,
        system_id: str | None = None,
        validate_only: bool = False,
        compile_only: bool = False,
    ) -> Any:
        """Validate, compile, and (unless ``compile_only``) program ``system``."""
