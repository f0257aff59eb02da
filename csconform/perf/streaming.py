"""Weight-streaming execution on one system or a data-parallel cluster (seed 004).

The model, per training step (each system holds a shard of ``batch_per_system`` samples):

* Forward, layer by layer from the input: MemoryX broadcasts the layer's weights through SwarmX
  (every system receives the whole layer over its own system I/O link), and each wafer computes
  the layer for its shard.  Layer time = max(compute, weight broadcast in); the next layer's
  weights stream in while this one computes, so the transfers overlap the compute.
* Backward, in reverse order: the weights are broadcast again, the wafer recomputes the layer's
  internals from the saved layer input and back-propagates, and the weight gradient leaves over
  system I/O into SwarmX, which adds the systems' gradients on the way to MemoryX.
  Layer time = max(compute, weights in, gradients out) (I/O is full duplex).
* SwarmX is a tree: each pass pays its depth once (a fill of the stream), ceil(log2 N) hops, on
  the forward broadcast, the backward broadcast and the final reduction.
* MemoryX runs the optimizer on each layer's summed gradient while earlier layers are still back-
  propagating, so the optimizer is off the wafer and off the critical path; the wafer does no
  weight-update FLOPs in this mode.

A "layer" here is a kernel of :func:`~csconform.perf.costs.group_kernels` (one transformer block):
the unit brought onto the wafer at a time.  Memory on the wafer: the saved input of every layer
for the shard (activation checkpoints), plus the working activations of the layer in flight, plus
two copies (double buffer) of that layer's streamed weights.  A shard larger than that is split
into micro-batches, each a full pass of weights in and gradients out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from csconform.errors import CapacityError, InvalidInputError
from csconform.perf.costs import KernelCost, Layer, group_kernels
from csconform.perf.hardware import MEMORYX, SWARMX, Wafer, check_cluster_size, get_wafer

STREAMED_WEIGHT_BYTES_PER_PARAM = 2  # assumption: weights travel in the 16-bit compute format
STREAMED_GRADIENT_BYTES_PER_PARAM = 4  # assumption: gradients travel in FP32 (FP32 accumulation)
WEIGHT_BUFFERS = 2  # one layer computing while the next streams in


@dataclass(frozen=True)
class StreamedLayer:
    """Per-layer figures for one micro-batch pass (seconds)."""

    name: str
    params: int
    forward_compute_s: float
    backward_compute_s: float
    weights_in_s: float
    gradients_out_s: float

    @property
    def forward_s(self) -> float:
        return max(self.forward_compute_s, self.weights_in_s)

    @property
    def backward_s(self) -> float:
        return max(self.backward_compute_s, self.weights_in_s, self.gradients_out_s)

    @property
    def bound(self) -> str:
        """What limits this layer: 'compute' or 'io'."""
        return (
            "compute"
            if self.forward_compute_s + self.backward_compute_s >= (self.forward_s + self.backward_s - 1e-15)
            else "io"
        )


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
    def compute_s(self) -> float:
        """Step time the wafer spends computing (all micro-batches)."""
        return self.batch_per_system * self.hardware_flops_per_sample / self.wafer.peak_flops_per_s

    @property
    def io_exposed_s(self) -> float:
        """Step time not covered by compute: waiting on weights/gradients and on SwarmX latency."""
        return self.step_s - self.compute_s


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
    layers: Sequence[Layer], wafer: str | Wafer = "wse2", systems: int = 1, batch_per_system: int = 1
) -> StreamingResult:
    """Model one training step of weight streaming on ``systems`` systems."""
    w = get_wafer(wafer)
    check_cluster_size(w, systems)
    if not isinstance(batch_per_system, int) or isinstance(batch_per_system, bool) or batch_per_system < 1:
        raise InvalidInputError(f"batch_per_system must be a positive integer, got {batch_per_system!r}")
    kernels = group_kernels(layers)
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
    # micro-batch sizes differ by at most one: `larger` of them have one sample more than the rest
    smaller_size, larger = divmod(batch_per_system, micro_batches)
    latency = SWARMX.latency_s(systems)
    step_s = larger * _pass_s(_streamed(kernels, w, smaller_size + 1), latency)
    if micro_batches > larger:
        step_s += (micro_batches - larger) * _pass_s(_streamed(kernels, w, smaller_size), latency)
    hardware_flops = sum(2 * k.forward_flops + k.backward_flops for k in kernels)
    model_flops = sum(k.forward_flops + k.backward_flops for k in kernels)
    return StreamingResult(
        wafer=w,
        systems=systems,
        batch_per_system=batch_per_system,
        micro_batch=micro,
        micro_batches=micro_batches,
        layers=_streamed(kernels, w, micro),
        swarmx_latency_s=latency,
        step_s=step_s,
        hardware_flops_per_sample=hardware_flops,
        model_flops_per_sample=model_flops,
        wafer_memory_bytes=activation_memory_bytes(kernels, micro)
        + WEIGHT_BUFFERS * STREAMED_WEIGHT_BYTES_PER_PARAM * largest.used_params,
        params=params,
    )


def _streamed(kernels: Sequence[KernelCost], w: Wafer, samples: int) -> tuple[StreamedLayer, ...]:
    """Per-layer times of one pass of ``samples`` samples."""
    io, peak = w.system_io_bytes_per_s, w.peak_flops_per_s
    return tuple(
        StreamedLayer(
            name=k.name,
            params=k.used_params,
            forward_compute_s=samples * k.forward_flops / peak,
            backward_compute_s=samples * (k.backward_flops + k.forward_flops) / peak,  # + recompute
            weights_in_s=k.used_params * STREAMED_WEIGHT_BYTES_PER_PARAM / io,
            gradients_out_s=k.used_params * STREAMED_GRADIENT_BYTES_PER_PARAM / io,
        )
        for k in kernels
    )


def _pass_s(layers: Sequence[StreamedLayer], swarmx_latency_s: float) -> float:
    """Forward and backward over every layer, plus the SwarmX tree depth on both broadcasts and the reduce."""
    return sum(x.forward_s + x.backward_s for x in layers) + 3 * swarmx_latency_s


def scaling_efficiency(layers: Sequence[Layer], wafer: str | Wafer, systems: int, batch_per_system: int) -> float:
    """Weak scaling: samples/s on N systems / (N x samples/s on one), same shard per system."""
    one = weight_streaming(layers, wafer, 1, batch_per_system).samples_per_s
    many = weight_streaming(layers, wafer, systems, batch_per_system).samples_per_s
    return many / (systems * one)


def strong_scaling_efficiency(layers: Sequence[Layer], wafer: str | Wafer, systems: int, global_batch: int) -> float:
    """Strong scaling: a fixed global batch split over N systems (shards shrink as N grows)."""
    if global_batch % systems:
        raise InvalidInputError(f"global batch {global_batch} does not split evenly over {systems} systems")
    one = weight_streaming(layers, wafer, 1, global_batch).samples_per_s
    many = weight_streaming(layers, wafer, systems, global_batch // systems).samples_per_s
    return many / (systems * one)
