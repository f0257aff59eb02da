"""Compilation: map every operation of a traced graph to a kernel and bind the result to a system.

Seed 002 ("Layer pipelined mode"): the compiler extracts the graph of operations and maps each one
to a supported kernel (``validate_only`` stops there, a lightweight check), then sizes and places a
region per kernel (``compile_only`` produces this full artifact without touching a system). Seed
000 ("Static Graphs"): only the modes "train" and "eval" exist on the CS system, because the fabric
cannot be reprogrammed for eval after train in the same run. Seed 001 ("Compilation differences"):
an artifact compiled for one system is refused by another (see :mod:`csconform.engine.system`;
``System`` is re-exported here so that ``engine.compiler.System`` reaches it through the engine
interface).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from csconform.engine import context
from csconform.engine.graph import Graph
from csconform.engine.system import System
from csconform.errors import ExecutionModeError, InvalidInputError, UnsupportedOperationError

__all__ = ["MODES", "SUPPORTED_KERNELS", "CompiledArtifact", "System", "ValidationReport", "compile_graph", "validate"]

MODES = ("train", "eval", "train_and_eval")

SUPPORTED_KERNELS = frozenset(
    {
        "input",
        "linear",
        "matmul",
        "add",
        "sub",
        "mul",
        "div",
        "neg",
        "relu",
        "gelu",
        "sigmoid",
        "tanh",
        "softmax",
        "log_softmax",
        "cross_entropy",
        "softmax_cross_entropy",
        "mse_loss",
        "mean",
        "sum",
        "reshape",
        "transpose",
        "embedding",
        "layer_norm",
        "layernorm",
        "crossentropyloss",
        "mseloss",
        "multiheadselfattention",
        "dropout",
        "cast",
    }
)
"""Operation names the wafer has kernels for. Anything else is refused when compiling for cs."""


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of ``validate_only``: the kernel chosen for every operation, nothing placed."""

    graph: Graph
    mode: str
    kernels: tuple[str, ...]


@dataclass(frozen=True)
class CompiledArtifact:
    """A full compile: the graph, its kernels, the system it is bound to, and its placement."""

    graph: Graph
    mode: str
    kernels: tuple[str, ...]
    system_id: str
    placement: Any = None
    modeled_samples_per_s: float | None = None


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidInputError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    if mode == "train_and_eval" and context.on_cs():
        raise ExecutionModeError(
            'mode "train_and_eval" is not supported on the CS system: the fabric cannot be reprogrammed '
            'for eval after it has been programmed for train in the same run; use mode "train" or "eval"'
        )


def map_kernels(graph: Graph) -> tuple[str, ...]:
    """The kernel for each operation; on cs an operation without a kernel is refused by name."""
    kernels = []
    for op in graph.ops:
        if op.name not in SUPPORTED_KERNELS and context.on_cs():
            raise UnsupportedOperationError(
                f"operation {op.name!r} ({op.describe()}) maps to no supported kernel on the CS system"
            )
        kernels.append(op.name)
    return tuple(kernels)


def validate(graph: Graph, mode: str = "train") -> ValidationReport:
    """The lightweight check (``validate_only``): modes and kernel mapping, no placement."""
    check_mode(mode)
    return ValidationReport(graph=graph, mode=mode, kernels=map_kernels(graph))


def compile_graph(
    graph: Graph,
    *,
    mode: str = "train",
    system: System | None = None,
    system_id: str | None = None,
    validate_only: bool = False,
    compile_only: bool = False,
) -> ValidationReport | CompiledArtifact:
    """Compile ``graph`` for a system.

    ``validate_only`` returns a :class:`ValidationReport`. ``compile_only`` returns the full
    artifact for ``system_id`` (or ``system``) without loading it. Otherwise ``system`` is required
    and is programmed with the artifact.
    """
    report = validate(graph, mode)
    if validate_only:
        return report
    target_id = system.system_id if system is not None else system_id
    if target_id is None:
        raise InvalidInputError("compiling needs a system, or a system_id together with compile_only=True")
    artifact = CompiledArtifact(graph=graph, mode=mode, kernels=report.kernels, system_id=target_id)
    if compile_only:
        return artifact
    if system is None:
        raise InvalidInputError("a full compile loads the program onto a system; pass system=, or compile_only=True")
    system.load(artifact)
    return artifact
