"""Execution modes: layer pipelined (the whole model on one wafer) and weight streaming.

pipelined-execution#Pipelined Execution: in pipelined mode every layer lives on the wafer for the whole
run, so the model must fit the on-chip memory; an original installation supports nothing else.
appliance-mode-blog#Weight Streaming Execution on the Cerebras Wafer-Scale Cluster: weights stay in
MemoryX and are streamed in one layer at a time; each of the N systems computes its shard of the batch;
the backward pass streams the layers again in reverse order; SwarmX adds the N weight gradients;
MemoryX applies the update with the chosen optimizer.

Both executors offer ``forward_backward(features, labels, loss_fn, loss_scale) -> loss`` which
leaves the (scaled) gradient of the whole batch in every master ``Parameter.grad``; the runner then
performs the optimizer step (on the wafer for pipelined, in MemoryX for weight streaming).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from csconform.arguments import check_integer, check_type
from csconform.engine import context
from csconform.engine.graph import Graph
from csconform.engine.nn import Module, Sequential
from csconform.engine.system import System
from csconform.errors import CapacityError, ExecutionModeError, InvalidInputError
from csconform.interface.kit.modules import ModuleTree

EXECUTION_MODES = ("pipelined", "weight_streaming")

WEIGHT_BYTES = 4  # weights, their gradients and optimizer state are FP32 (public-facts#Number formats)
ACTIVATION_BYTES = 2  # activations are 16-bit on the wafer

MAX_BATCH_SIZE = 2**31
"""Largest batch the capacity checks take; a larger one is a mistyped size, refused as such."""
OPTIMIZER_SLOTS_PER_WEIGHT = {"SGD": 1, "Adam": 2, "AdamW": 2}
"""FP32 values an optimizer keeps per weight (SGD momentum: 1; Adam: 2 moments)."""
PIPELINED_TOO_LARGE = (
    "the model needs {needed} on chip in pipelined mode (FP32 weights, gradients and optimizer state plus "
    "activations) but {wafer} has {available}; use weight streaming execution for models this large"
)
STREAMED_LAYER_TOO_LARGE = (
    "even one layer at a time the model needs {needed} on chip but {wafer} has {available}; use a smaller "
    "batch or split the layer"
)
"""The refusals of a model the wafer cannot hold, by execution mode (``{needed}`` and ``{available}`` in GB)."""


@dataclass(frozen=True)
class Footprint:
    """What a model needs on the wafer, in numbers of values (bytes follow from the formats)."""

    parameters: int
    activation_elements_per_sample: int
    optimizer_slots_per_weight: int = 2
    largest_layer_parameters: int | None = None

    def on_chip_bytes(self, batch_size: int) -> int:
        """Pipelined: FP32 weights, gradients and optimizer state, plus 16-bit activations of one batch."""
        weight_bytes = self.parameters * WEIGHT_BYTES * (2 + self.optimizer_slots_per_weight)
        return weight_bytes + self.activation_elements_per_sample * batch_size * ACTIVATION_BYTES

    def streaming_bytes(self, batch_size: int) -> int:
        """Weight streaming: one layer's FP32 weights and gradients, plus 16-bit activations of one batch.

        The optimizer state stays in MemoryX.
        """
        layer = self.parameters if self.largest_layer_parameters is None else self.largest_layer_parameters
        return layer * WEIGHT_BYTES * 2 + self.activation_elements_per_sample * batch_size * ACTIVATION_BYTES


def optimizer_slots(optimizer: Any) -> int:
    """FP32 state values the optimizer keeps per weight (declared, or known by class name)."""
    declared = getattr(optimizer, "state_slots_per_weight", None)
    if declared is not None:
        return int(declared)
    return OPTIMIZER_SLOTS_PER_WEIGHT.get(type(optimizer).__name__, 2)


def footprint_of(model: Module, step_graph: Graph, batch_size: int, optimizer: Any = None) -> Footprint:
    """Measure a real model from its traced step: parameters, and the activations each op reads.

    Reading the sizes off the graph (rather than running the model again) keeps the measurement free
    of side effects such as advancing a dropout layer's random stream.
    """
    check_type("model", model, Module, "a Module (engine.nn)")
    check_type("step_graph", step_graph, Graph, "a traced Graph (graph.trace)")
    check_integer("batch_size", batch_size, minimum=1, maximum=MAX_BATCH_SIZE)
    activation_elements = sum(int(np.prod(op.input_shapes[0])) for op in step_graph.ops if op.input_shapes)
    per_sample = -(-activation_elements // max(batch_size, 1))
    parameters = sum(int(p.data.size) for p in model.parameters())
    largest = max((sum(int(p.data.size) for p in layer.parameters()) for layer in stream_layers(model)), default=0)
    slots = 0 if optimizer is None else optimizer_slots(optimizer)
    return Footprint(parameters, per_sample, slots, largest)


def check_mode_supported(mode: str, system: System) -> None:
    if mode not in EXECUTION_MODES:
        raise InvalidInputError(f"unknown execution mode {mode!r}; known: {', '.join(EXECUTION_MODES)}")
    if mode == "weight_streaming" and system.installation == "original" and context.on_cs():
        raise ExecutionModeError(
            "the original Cerebras installation supports pipelined execution only; weight streaming needs "
            "a Wafer-Scale Cluster in appliance mode"
        )


def check_pipelined_fits(footprint: Footprint, batch_size: int, system: System) -> None:
    """Refuse (on cs) a model whose pipelined footprint exceeds the wafer's on-chip memory."""
    _check_fits(footprint, batch_size, system, Footprint.on_chip_bytes, PIPELINED_TOO_LARGE)


def check_weight_streaming_fits(footprint: Footprint, batch_size: int, system: System) -> None:
    """Refuse (on cs) a model whose largest layer and one batch of activations exceed the wafer."""
    _check_fits(footprint, batch_size, system, Footprint.streaming_bytes, STREAMED_LAYER_TOO_LARGE)


def _check_fits(
    footprint: Footprint,
    batch_size: int,
    system: System,
    needed_bytes: Callable[[Footprint, int], float],
    refusal: str,
) -> None:
    """The arguments checked, then on cs a CapacityError when ``needed_bytes(footprint, batch_size)``
    exceed the wafer's on-chip memory: ``refusal`` with ``{needed}``, ``{wafer}`` and ``{available}``."""
    check_type("footprint", footprint, Footprint, "a Footprint (footprint_of)")
    check_integer("batch_size", batch_size, minimum=1, maximum=MAX_BATCH_SIZE)
    check_type("system", system, System, "a System")
    needed = needed_bytes(footprint, batch_size)
    if context.on_cs() and needed > system.sram_bytes:
        raise CapacityError(
            refusal.format(
                needed=f"{needed / 1e9:.1f} GB", wafer=system.wafer, available=f"{system.sram_bytes / 1e9:.0f} GB"
            )
        )


def stream_layers(model: Module) -> list[Module]:
    """The units streamed one at a time: the layers of a Sequential, else the whole model."""
    return list(model.layers) if isinstance(model, Sequential) else [model]


def _generators(module: ModuleTree) -> list[np.random.Generator]:
    found = [value for value in vars(module).values() if isinstance(value, np.random.Generator)]
    return found + [g for _name, child in module.named_children() for g in _generators(child)]


class _GradientCapture(Module):
    """An identity at the end of the forward pass that keeps d(loss)/d(prediction)."""

    def __init__(self) -> None:
        self.grad: np.ndarray | None = None

    def forward(self, x: Any) -> np.ndarray:
        return np.array(x, copy=True)

    def backward(self, grad_out: np.ndarray) -> None:
        self.grad = np.asarray(grad_out, dtype=np.float32)
        return None


def loss_and_output_gradient(
    prediction: np.ndarray, labels: Any, loss_fn: Callable[..., Any], seed: float | np.floating
) -> tuple[float, np.ndarray]:
    """The loss value and ``seed`` times its gradient with respect to ``prediction``."""
    capture = _GradientCapture()
    loss = loss_fn(capture(prediction), labels)
    (loss * seed).backward()
    if capture.grad is None:
        raise InvalidInputError("the loss function did not produce a gradient for the prediction")
    return float(loss), capture.grad


class PipelinedExecutor:
    """All layers resident on one wafer; activations flow forward, gradients back, every step."""

    mode = "pipelined"

    def __init__(self, model: Module, system: System) -> None:
        check_type("model", model, Module, "a Module (engine.nn)")
        check_type("system", system, System, "a System")
        check_mode_supported(self.mode, system)
        self.model = model
        self.system = system

    def forward_backward(
        self, features: Any, labels: Any, loss_fn: Callable[..., Any], loss_scale: float | np.floating
    ) -> float:
        loss = loss_fn(self.model(features), labels)
        (loss * loss_scale).backward()
        return float(loss)

    def apply_update(self, update: Callable[[], Any]) -> Any:
        """The weights are updated on the wafer, in place, in the region that holds their layer."""
        return update()


@dataclass(frozen=True)
class StreamEvent:
    """One step of weight streaming, recorded so the order can be checked."""

    kind: str  # "broadcast_forward" | "broadcast_backward" | "reduce" | "update"
    layer: int | None
    systems: int


@dataclass
class MemoryX:
    """The off-wafer weight store: holds the master weights and runs the optimizer."""

    model: Module
    events: list[StreamEvent] = field(default_factory=list)

    def broadcast(self, layer_index: int, systems: int) -> list[Module]:
        """Send one layer's weights to every system (SwarmX replicates them): one copy per wafer."""
        self.events.append(StreamEvent("broadcast_forward", layer_index, systems))
        layer = stream_layers(self.model)[layer_index]
        # Random generators (dropout) are shared, not copied: the shards draw in turn from the
        # layer's one stream, which therefore advances from step to step as it does in pipelined mode.
        shared = {id(value): value for value in _generators(layer)}
        replicas = [copy.deepcopy(layer, memo=dict(shared)) for _ in range(systems)]
        for replica in replicas:
            replica.zero_grad()
        return replicas

    def rebroadcast(self, layer_index: int, replicas: list[Module]) -> None:
        """Stream one layer's weights again for the backward pass (the activations stayed on the wafer)."""
        self.events.append(StreamEvent("broadcast_backward", layer_index, len(replicas)))
        master = dict(stream_layers(self.model)[layer_index].named_parameters())
        for replica in replicas:
            for name, parameter in replica.named_parameters():
                parameter.data[...] = master[name].data


class SwarmX:
    """The broadcast/reduce fabric between MemoryX and the systems: sums weight gradients."""

    @staticmethod
    def reduce(gradients: list[np.ndarray | None]) -> np.ndarray | None:
        """The float32 sum of the systems' gradients, added in system order."""
        present = [g for g in gradients if g is not None]
        if not present:
            return None
        total = np.zeros_like(present[0], dtype=np.float32)
        for gradient in present:
            total += gradient
        return total


class WeightStreamingExecutor:
    """Data parallel over ``num_systems`` wafers with weights streamed from MemoryX layer by layer."""

    mode = "weight_streaming"

    def __init__(self, model: Module, systems: list[System]) -> None:
        check_type("model", model, Module, "a Module (engine.nn)")
        if not isinstance(systems, list | tuple) or not all(isinstance(system, System) for system in systems):
            raise InvalidInputError(f"systems must be a list of Systems, got {type(systems).__name__}")
        if not systems:
            raise InvalidInputError("weight streaming needs at least one system")
        for system in systems:
            check_mode_supported(self.mode, system)
        self.model = model
        self.systems = systems
        self.memoryx = MemoryX(model)

    @property
    def events(self) -> list[StreamEvent]:
        return self.memoryx.events

    def shard(self, array: Any) -> list[Any]:
        """Split a batch into one equal shard per system."""
        if array is None:
            return [None] * len(self.systems)
        batch = np.asarray(array)
        if batch.ndim == 0 or batch.shape[0] % len(self.systems):
            raise InvalidInputError(
                f"batch size {batch.shape[0] if batch.ndim else 0} is not divisible by the number of systems "
                f"{len(self.systems)}; each system must receive an equal shard of the batch"
            )
        return np.split(batch, len(self.systems))

    def forward_backward(
        self, features: Any, labels: Any, loss_fn: Callable[..., Any], loss_scale: float | np.floating
    ) -> float:
        feature_shards = self.shard(features)
        label_shards = self.shard(labels)
        systems = len(self.systems)
        layer_count = len(stream_layers(self.model))

        activations = feature_shards
        replicas_by_layer = []
        for index in range(layer_count):
            replicas = self.memoryx.broadcast(index, systems)
            activations = [replica.forward(x) for replica, x in zip(replicas, activations, strict=True)]
            replicas_by_layer.append(replicas)

        # Each system's loss is the mean over its shard; seeding its backward with 1/systems makes
        # the summed gradients those of the mean over the whole batch.
        shard_losses: list[float] = []
        grads: list[Any] = []
        for prediction, labels_shard in zip(activations, label_shards, strict=True):
            loss, grad = loss_and_output_gradient(prediction, labels_shard, loss_fn, loss_scale / systems)
            shard_losses.append(loss)
            grads.append(grad)

        master_layers = stream_layers(self.model)
        for index in reversed(range(layer_count)):
            replicas = replicas_by_layer[index]
            self.memoryx.rebroadcast(index, replicas)
            grads = [replica.backward(g) for replica, g in zip(replicas, grads, strict=True)]
            self.reduce_into_master(index, replicas, master_layers[index])
        return float(np.mean(np.asarray(shard_losses, dtype=np.float32), dtype=np.float32))

    def apply_update(self, update: Callable[[], Any]) -> Any:
        """The optimizer runs in MemoryX on the master weights and the summed gradients."""
        self.events.append(StreamEvent("update", None, len(self.systems)))
        return update()

    def reduce_into_master(self, index: int, replicas: list[Module], master: Module) -> None:
        """SwarmX sums the replicas' weight gradients and returns them to MemoryX."""
        self.events.append(StreamEvent("reduce", index, len(replicas)))
        replica_parameters = [dict(replica.named_parameters()) for replica in replicas]
        for name, parameter in master.named_parameters():
            summed = SwarmX.reduce([parameters[name].grad for parameters in replica_parameters])
            if summed is not None:
                parameter.accumulate_grad(summed)
