"""Compilation: map every operation of a traced graph to a kernel and bind the result to a system.

pipelined-execution#Layer pipelined mode: the compiler extracts the graph of operations and maps
each one to a supported kernel (``validate_only`` stops there, a lightweight check), then sizes and
places a region per kernel and connects the regions of adjacent kernels with data paths,
activations forward and gradients back (``compile_only`` produces this full artifact without
touching a system). pytorch-limitations#Layer Pipelined model: a pipelined training program also
carries the learning-rate schedule of every param group, programmed into the fabric with the graph.
pytorch-limitations#Static Graphs: only the modes "train" and "eval" exist on the CS system, because
the fabric cannot be reprogrammed for eval after train in the same run.
estimator-limitations#Compilation differences: an artifact compiled for one system is refused by
another (see :mod:`csconform.engine.system`; ``System`` is re-exported here so that
``engine.compiler.System`` reaches it through the engine interface). What a compile produces is in
:mod:`csconform.engine.artifact`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from csconform.arguments import check_type
from csconform.engine import context
from csconform.engine.artifact import CompiledArtifact, ValidationReport
from csconform.engine.graph import Graph
from csconform.engine.system import System
from csconform.errors import ExecutionModeError, InvalidInputError, UnsupportedOperationError
from csconform.interface.kit import runs

__all__ = ["SUPPORTED_KERNELS", "System", "compile_graph", "validate"]

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


def check_mode(mode: str) -> str:
    """``mode`` if it is one of the interface's modes and runs on the current target."""
    runs.check_mode(mode)
    if mode == "train_and_eval" and context.on_cs():
        raise ExecutionModeError(
            'mode "train_and_eval" is not supported on the CS system: the fabric cannot be reprogrammed '
            'for eval after it has been programmed for train in the same run; use mode "train" or "eval"'
        )
    return mode


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


def perf_layers(graph: Graph) -> list[Any]:
    """The graph's weighted operations as layer descriptions of the performance model.

    A traced layer call lists its input first and then its own weights, so a linear layer's weight
    shape (out_features, in_features) gives the dense kernel; weightless operations (activations,
    the loss) are folded into their neighbours by the performance model and are not listed.
    """
    from csconform.perf.models.layer import Layer

    layers = []
    for index, op in enumerate(graph.ops):
        shapes = op.input_shapes
        tokens = int(np.prod(shapes[0][1:-1])) if shapes and len(shapes[0]) > 2 else 1
        name = f"{index}:{op.name}"
        if op.name == "linear" and len(shapes) >= 2:
            out_features, in_features = shapes[1]
            layers.append(Layer("dense", in_features, out_features, tokens=tokens, name=name, bias=len(shapes) > 2))
        elif op.name == "layernorm" and len(shapes) >= 2:
            layers.append(Layer("layer_norm", shapes[1][0], shapes[1][0], tokens=tokens, name=name))
        elif op.name == "embedding" and len(shapes) >= 2:
            vocabulary, width = shapes[1]
            layers.append(Layer("embedding", vocabulary, width, tokens=max(int(np.prod(shapes[0][1:])), 1), name=name))
    return layers


def model_performance(
    graph: Graph, wafer: str, execution: str, systems: int
) -> tuple[list[dict[str, Any]] | None, float | None]:
    """Placement (one rectangle per kernel) and modeled samples/s from the performance model."""
    from csconform.perf.plan import plan

    layers = perf_layers(graph)
    if not layers or not graph.ops or not graph.ops[0].input_shapes or not graph.ops[0].input_shapes[0]:
        return None, None
    batch = graph.ops[0].input_shapes[0][0]
    modeled = plan(layers, wafer=wafer, mode=execution, systems=systems, batch=batch)
    return modeled.kernels, float(modeled.samples_per_s)


def _centre_cell(region: dict[str, Any]) -> tuple[int, int]:
    return (region["x"] + region["width"] // 2, region["y"] + region["height"] // 2)


def _data_path(source: dict[str, Any], destination: dict[str, Any], carries: str) -> dict[str, Any]:
    """A route over the fabric's mesh from the centre core of one region to that of another: along x, then y."""
    (x0, y0), (x1, y1) = _centre_cell(source), _centre_cell(destination)
    return {
        "source": source["name"],
        "destination": destination["name"],
        "carries": carries,
        "route": ((x0, y0), (x1, y0), (x1, y1)),
    }


def connect_regions(placement: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Data paths between the regions of adjacent kernels (listed in pipeline order, input side first).

    Activations flow from each kernel's region to the next kernel's; gradients flow back the other way.
    """
    paths: list[dict[str, Any]] = []
    for upstream, downstream in zip(placement, placement[1:], strict=False):
        paths.append(_data_path(upstream, downstream, "activations"))
        paths.append(_data_path(downstream, upstream, "gradients"))
    return tuple(paths)


def compile_graph(
    graph: Graph,
    *,
    mode: str = "train",
    system: System | None = None,
    system_id: str | None = None,
    validate_only: bool = False,
    compile_only: bool = False,
    performance: bool = False,
    execution: str = "pipelined",
    systems: int = 1,
    learning_rate_schedules: Sequence[Any] = (),
) -> ValidationReport | CompiledArtifact:
    """Compile ``graph`` for a system.

    ``validate_only`` returns a :class:`ValidationReport`. ``compile_only`` returns the full
    artifact for ``system_id`` (or ``system``) without loading it. Otherwise ``system`` is required
    and is programmed with the artifact. ``performance=True`` also places the kernels, connects
    their regions and models the throughput with csconform.perf (a solver run, so tests and quick
    runs leave it off). ``learning_rate_schedules`` (one per param group) go into a pipelined
    training program; weight streaming keeps the schedule with the optimizer in MemoryX.
    """
    check_type("graph", graph, Graph, "a traced Graph (graph.trace)")
    if system is not None:
        check_type("system", system, System, "a System")
    report = validate(graph, mode)
    if validate_only:
        return report
    target_id = system.system_id if system is not None else system_id
    if target_id is None:
        raise InvalidInputError("compiling needs a system, or a system_id together with compile_only=True")
    placement, samples_per_s = None, None
    if performance:
        wafer = system.wafer if system is not None else "WSE-2"
        placement, samples_per_s = model_performance(graph, wafer, execution, systems)
    pipelined = execution == "pipelined"
    artifact = CompiledArtifact(
        graph=graph,
        mode=mode,
        kernels=report.kernels,
        system_id=target_id,
        placement=placement,
        modeled_samples_per_s=samples_per_s,
        execution=execution,
        data_paths=connect_regions(placement) if placement and pipelined else (),
        learning_rate_schedules=tuple(learning_rate_schedules) if pipelined and mode == "train" else (),
    )
    if compile_only:
        return artifact
    if system is None:
        raise InvalidInputError("a full compile loads the program onto a system; pass system=, or compile_only=True")
    system.load(artifact)
    return artifact
