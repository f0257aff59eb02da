"""Weight-streaming execution on one system or a data-parallel cluster (appliance-mode-blog).

The model, per training step (each system holds a shard of ``batch_per_system`` samples):

* Forward, layer by layer from the input: MemoryX broadcasts the layer's weights through SwarmX
  (every system receives the whole layer over its own system I/O link), and each wafer computes
  the layer for its shard.  The next layer's weights stream in while this one computes, so a layer
  takes max(compute, weights in), plus the fixed ``layer_latency_s`` per weight layer that compute
  does not hide (the wafer switching to the next streamed layer).
* Backward, in reverse order: the weights are broadcast again, the wafer recomputes the layer's
  internals from the saved layer input and back-propagates, and the weight gradient leaves over
  system I/O into SwarmX, which adds the systems' gradients on the way to MemoryX.
  Layer time = max(compute, weights in, gradients out) + the same latency (I/O is full duplex).
* Compute runs at the calibrated fractions of the peak (:mod:`csconform.perf.execution.efficiency`): the
  weight kernels at ``matmul_efficiency``, the attention core at ``attention_efficiency``.
* SwarmX is a tree: each pass pays its depth once (a fill of the stream), ceil(log2 N) hops, on
  the forward broadcast, the backward broadcast and the final reduction.
* MemoryX runs the optimizer on each layer's summed gradient while earlier layers are still back-
  propagating, so the optimizer is off the wafer and off the critical path; the wafer does no
  weight-update FLOPs in this mode.
* The input workers of each system deliver at most ``input_tokens_per_s``: a step is never shorter
  than the time they take to feed the shard.

A "layer" here is a kernel of :func:`~csconform.perf.models.kernels.group_kernels` (one transformer block):
the unit brought onto the wafer at a time; its ``weight_layers`` (attention, MLP matrices) each pay
the latency.  Memory on the wafer: the saved input of every layer for a micro-batch (activation
checkpoints), the working activations of the layer in flight, and two copies (double buffer) of
that layer's streamed weights.  A shard larger than a micro-batch is worked through in micro-batches
under the same weight broadcast, layer by layer (checkpoints that do not fit are offloaded, as in
Cerebras' release 2.0 "dynamic memory offload"), so the weight traffic and the latencies are paid
once per step, whatever the shard; the offload traffic itself is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from csconform.arguments import check_integer
from csconform.errors import CapacityError, InvalidInputError
from csconform.perf.execution.efficiency import Calibration, effective_flops, fitted, input_samples_per_s
from csconform.perf.hardware import MEMORYX, SWARMX, Wafer, check_cluster_size, get_wafer
from csconform.perf.models.kernels import KernelCost, group_kernels
from csconform.perf.models.layer import Layer

STREAMED_WEIGHT_BYTES_PER_PARAM = 2  # assumption: weights travel in the 16-bit compute format
STREAMED_GRADIENT_BYTES_PER_PARAM = 4  # assumption: gradients travel in FP32 (FP32 accumulation)
WEIGHT_BUFFERS = 2  # one layer computing while the next streams in


@dataclass(frozen=True)
class StreamedLayer:
    """Per-layer figures for one step of one system (seconds)."""

    name: str
    params: int
    forward_compute_s: float
    backward_compute_s: float
    weights_in_s: float
    gradients_out_s: float
    latency_s: float = 0.0

    @property
    def forward_s(self) -> float:
        return max(self.forward_compute_s, self.weights_in_s) + self.latency_s

    @property
    def backward_s(self) -> float:
        return max(self.backward_compute_s, self.weights_in_s, self.gradients_out_s) + self.latency_s

    @property
    def bound(self) -> str:
        """What sets this layer's time: 'latency' when the fixed latency outweighs the rest, else 'io'
        when weights or gradients are not hidden by compute, else 'compute'."""
        busy = self.forward_s + self.backward_s - 2 * self.latency_s
        if 2 * self.latency_s > busy:
            return "latency"
        return "compute" if self.forward_compute_s + self.backward_compute_s >= busy * (1 - 1e-12) else "io"


@dataclass(frozen=True)
class StreamingResult:
    wafer: Wafer
    systems: int
    batch_per_system: int
    micro_batch: int
    micro_batches: int
    layers: tuple[StreamedLayer, ...]
    swarmx_latency_s: float
    step_s: float
    hardware_flops_per_sample: float
    model_flops_per_sample: float
    wafer_memory_bytes: float
    params: int
    input_samples_per_s: float = math.inf
    calibration: Calibration | None = None

    @property
    def global_batch(self) -> int:
        return self.batch_per_system * self.systems

    @property
    def samples_per_s(self) -> float:
        return self.global_batch / self.step_s

    @property
    def bound_samples_per_s(self) -> float:
        """Compute-only bound: every system busy at peak on the wafer's FLOPs for the step."""
        return self.systems * self.wafer.peak_flops_per_s / self.hardware_flops_per_sample

    @property
    def streamed_weight_bytes(self) -> float:
        """Weight bytes MemoryX sends each system per step: every layer's weights (every expert's), forward
        and backward."""
        return 2 * STREAMED_WEIGHT_BYTES_PER_PARAM * sum(x.params for x in self.layers)

    @property
    def streamed_gradient_bytes(self) -> float:
        """Gradient bytes each system sends towards MemoryX per step (every expert's)."""
        return STREAMED_GRADIENT_BYTES_PER_PARAM * sum(x.params for x in self.layers)

    @property
    def compute_s(self) -> float:
        """Step time the wafer spends computing, at the calibrated efficiencies."""
        return sum(x.forward_compute_s + x.backward_compute_s for x in self.layers)

    @property
    def latency_s(self) -> float:
        """Step time spent on the fixed per-layer latencies."""
        return sum(2 * x.latency_s for x in self.layers)

    @property
    def io_exposed_s(self) -> float:
        """Step time not covered by compute or latency: waiting on weights/gradients, SwarmX, the input."""
        return self.step_s - self.compute_s - self.latency_s

    @property
    def plateau_samples_per_s(self) -> float:
        """What a very large batch approaches: compute at the calibrated efficiencies, or the input."""
        per_system = min(self.input_samples_per_s, self.batch_per_system / self.compute_s)
        return self.systems * per_system

    @property
    def input_bound(self) -> bool:
        """True when the input workers, not the wafer, set the step time."""
        return self.batch_per_system / self.input_samples_per_s >= self.step_s * (1 - 1e-12)


def activation_memory_bytes(kernels: Sequence[KernelCost], samples: int) -> float:
    """Wafer memory for ``samples`` samples: all layer-input checkpoints + the largest working set."""
    checkpoints = sum(k.input_bytes for k in kernels)
    working = max(k.activation_bytes_per_sample + k.output_bytes for k in kernels)
    return samples * (checkpoints + working)


def max_micro_batch(kernels: Sequence[KernelCost], wafer: Wafer) -> int:
    """Largest micro-batch whose activations fit beside the double-buffered largest layer."""
    weights = WEIGHT_BUFFERS * STREAMED_WEIGHT_BYTES_PER_PARAM * max(k.used_params for k in kernels)
    free = wafer.fabric_memory_bytes - weights
    per_sample = activation_memory_bytes(kernels, 1)
    return int(free // per_sample) if free > 0 else 0


def weight_streaming(
    layers: Sequence[Layer],
    wafer: str | Wafer = "wse2",
    systems: int = 1,
    batch_per_system: int = 1,
    calibration: Calibration | None = None,
) -> StreamingResult:
    """Model one training step of weight streaming on ``systems`` systems."""
    return weight_streaming_from_kernels(group_kernels(layers), wafer, systems, batch_per_system, calibration)


def weight_streaming_from_kernels(
    kernels: Sequence[KernelCost],
    wafer: str | Wafer,
    systems: int,
    batch_per_system: int,
    calibration: Calibration | None,
) -> StreamingResult:
    """:func:`weight_streaming` of a model already grouped into kernels (a plan groups its model once)."""
    w = get_wafer(wafer)
    check_cluster_size(w, systems)
    batch_per_system = check_integer("batch_per_system", batch_per_system, minimum=1)
    cal = calibration or fitted()
    params = sum(k.params for k in kernels)
    if params * MEMORYX.bytes_per_parameter > MEMORYX.max_capacity_bytes:
        raise CapacityError(
            f"{params:.3g} parameters exceed MemoryX's largest configuration ({MEMORYX.max_parameters:.3g} parameters)"
        )
    largest = max(kernels, key=lambda k: k.used_params)
    fits = max_micro_batch(kernels, w)
    if fits < 1:
        raise CapacityError(
            f"one sample's activations ({activation_memory_bytes(kernels, 1):.3g} B) and layer "
            f"{largest.name!r} ({largest.used_params:.3g} parameters, double-buffered) do not fit the "
            f"{w.name} wafer ({w.fabric_memory_bytes:.3g} B); use a shorter sequence"
        )
    micro_batches = math.ceil(batch_per_system / fits)
    micro = math.ceil(batch_per_system / micro_batches)
    latency = SWARMX.latency_s(systems)
    streamed = _streamed(kernels, w, batch_per_system, cal)
    feed = input_samples_per_s(kernels, cal)
    step_s = max(sum(x.forward_s + x.backward_s for x in streamed) + 3 * latency, batch_per_system / feed)
    hardware_flops = sum(2 * k.forward_flops + k.backward_flops for k in kernels)
    model_flops = sum(k.forward_flops + k.backward_flops for k in kernels)
    return StreamingResult(
        wafer=w,
        systems=systems,
        batch_per_system=batch_per_system,
        micro_batch=micro,
        micro_batches=micro_batches,
        layers=streamed,
        swarmx_latency_s=latency,
        step_s=step_s,
        hardware_flops_per_sample=hardware_flops,
        model_flops_per_sample=model_flops,
        wafer_memory_bytes=activation_memory_bytes(kernels, micro)
        + WEIGHT_BUFFERS * STREAMED_WEIGHT_BYTES_PER_PARAM * largest.used_params,
        params=params,
        input_samples_per_s=feed,
        calibration=cal,
    )


def _streamed(kernels: Sequence[KernelCost], w: Wafer, samples: int, cal: Calibration) -> tuple[StreamedLayer, ...]:
    """Per-layer times of one step for ``samples`` samples on one system."""
    io, peak = w.system_io_bytes_per_s, w.peak_flops_per_s
    layers = []
    for k in kernels:
        forward, backward = effective_flops(k, cal)
        layers.append(
            StreamedLayer(
                name=k.name,
                params=k.used_params,
                forward_compute_s=samples * forward / peak,
                backward_compute_s=samples * (backward + forward) / peak,  # + recompute
                weights_in_s=k.used_params * STREAMED_WEIGHT_BYTES_PER_PARAM / io,
                gradients_out_s=k.used_params * STREAMED_GRADIENT_BYTES_PER_PARAM / io,
                latency_s=k.weight_layers * cal.layer_latency_s,
            )
        )
    return tuple(layers)


def scaling_efficiency(
    layers: Sequence[Layer],
    wafer: str | Wafer,
    systems: int,
    batch_per_system: int,
    calibration: Calibration | None = None,
) -> float:
    """Weak scaling: samples/s on N systems / (N x samples/s on one), same shard per system."""
    kernels = group_kernels(layers)
    one = weight_streaming_from_kernels(kernels, wafer, 1, batch_per_system, calibration).samples_per_s
    many = weight_streaming_from_kernels(kernels, wafer, systems, batch_per_system, calibration).samples_per_s
    return many / (systems * one)


def strong_scaling_efficiency(
    layers: Sequence[Layer],
    wafer: str | Wafer,
    systems: int,
    global_batch: int,
    calibration: Calibration | None = None,
) -> float:
    """Strong scaling: a fixed global batch split over N systems (shards shrink as N grows)."""
    if global_batch % systems:
        raise InvalidInputError(f"global batch {global_batch} does not split evenly over {systems} systems")
    kernels = group_kernels(layers)
    one = weight_streaming_from_kernels(kernels, wafer, 1, global_batch, calibration).samples_per_s
    many = weight_streaming_from_kernels(kernels, wafer, systems, global_batch // systems, calibration).samples_per_s
    return many / (systems * one)
