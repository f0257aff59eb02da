"""The capability table: each capability, what it covers, and the Protocols of its submodules.

An implementation declares the capabilities it offers; the harness checks that it offers the
names each declared capability lists, and reports every check that needs an undeclared one as
``unsupported``. A submodule path (``"optim.lr_scheduler"``) belongs to exactly one capability.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from csconform.interface.amp import AmpModule
from csconform.interface.data import DataModule
from csconform.interface.estimator import EstimatorModule
from csconform.interface.execution import ApplianceModule, ExecutionModule
from csconform.interface.executor import ExecutorModule
from csconform.interface.graph import CompilerModule, GraphModule
from csconform.interface.metrics import MetricsModule
from csconform.interface.nn import NnModule
from csconform.interface.optim import LRSchedulerModule, OptimModule
from csconform.interface.precision import PrecisionModule
from csconform.interface.runner import CheckpointModule, RunnerModule

TARGETS = ("cs", "cpu")


@dataclass(frozen=True)
class Capability:
    name: str
    title: str
    modules: dict[str, type] = field(default_factory=dict)
    """Submodule path (relative to the implementation module) -> its Protocol."""


CAPABILITIES: tuple[Capability, ...] = (
    Capability("precision", "16-bit formats and the compute precision", {"precision": PrecisionModule}),
    Capability("amp", "GradScaler, dynamic loss scaling, optimizer_step", {"amp": AmpModule}),
    Capability("nn", "parameters, layers with gradients, losses", {"nn": NnModule}),
    Capability("optim", "optimizers with FP32 updates", {"optim": OptimModule}),
    Capability(
        "lr_schedule", "learning rates as functions of the global step", {"optim.lr_scheduler": LRSchedulerModule}
    ),
    Capability("data", "the input pipeline: fixed batches, repeat, shuffling", {"data": DataModule}),
    Capability("graph", "tracing, static graphs, compilation", {"graph": GraphModule, "compiler": CompilerModule}),
    Capability(
        "runner", "the training loop, checkpoints, resuming", {"runner": RunnerModule, "checkpoint": CheckpointModule}
    ),
    Capability("metrics", "eval metrics with one final value", {"metrics": MetricsModule}),
    Capability(
        "executor",
        "the PyTorch execution API: compile, trace, DataExecutor runs, step and checkpoint closures",
        {"executor": ExecutorModule},
    ),
    Capability("estimator", "the CerebrasEstimator contracts (TensorFlow flavour)", {"estimator": EstimatorModule}),
    Capability("execution", "pipelined and weight-streaming execution", {"execution": ExecutionModule}),
    Capability("appliance", "appliance mode and clusters of systems", {"appliance": ApplianceModule}),
    Capability("performance", "a performance model of the wafer (placement, throughput, clusters)"),
)

CAPABILITY_NAMES = tuple(capability.name for capability in CAPABILITIES)

_BY_PATH = {path: capability.name for capability in CAPABILITIES for path in capability.modules}


def capability_of_path(path: str) -> str | None:
    """The capability a submodule path belongs to (the longest declared prefix), or None."""
    while path:
        if path in _BY_PATH:
            return _BY_PATH[path]
        path = path.rpartition(".")[0]
    return None


def get_capability(name: str) -> Capability:
    for capability in CAPABILITIES:
        if capability.name == name:
            return capability
    raise KeyError(name)
