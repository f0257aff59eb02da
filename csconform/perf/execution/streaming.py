"""Weight-streaming execution on one system or a data-parallel cluster (appliance-mode-blog).

The model, per training step (each system holds a shard of ``batch_per_system`` samples):

* The shard runs in micro-batches: the wafer's lanes hold ``micro_batch_tokens`` tokens at once, so a
  shard of more tokens runs as ``shard tokens / micro_batch_tokens`` micro-batches, one after the
  other, each a whole forward and backward pass (the compiler logs of the measured runs name a
  per-system micro-batch and a number of lanes). Everything below happens once per micro-batch, so
  the throughput is flat in the batch once the lanes are full. The count is not rounded up: the
  model takes the average over shard sizes, which keeps samples/s a smooth function of the figures
  (the fit needs that) and exact at multiples of the lanes. A micro-batch the run asks for (a params
  file's ``csx.performance.micro_batch_size``) is used where it is smaller than the lanes: more,
  smaller micro-batches, each paying everything below again; a larger one still runs at the lanes.
* Forward, layer by layer from the input: MemoryX broadcasts the layer's weights through SwarmX
  (every system receives the whole layer over its own system I/O link), and each wafer computes
  the layer for its micro-batch.  The next layer's weights stream in while this one computes, so a
  layer takes max(compute, weights in), plus the fixed ``layer_latency_s`` per weight layer that
  compute does not hide (the wafer switching to the next streamed layer).
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
that layer's streamed weights; checkpoints that do not fit are offloaded (Cerebras' release 2.0
"dynamic memory offload"), whose traffic is not modelled. A model without token inputs (an image
model) has no lane figure: its shard runs as one micro-batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from csconform.arguments import check_integer
from csconform.errors import CapacityError, InvalidInputError
from csconform.perf.execution.efficiency import (
    Calibration,
    effective_flops,
    fitted,
    input_samples_per_s,
    input_tokens_per_sample,
)
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
    """One step of weight streaming: ``layers`` are the per-layer times of one micro-batch, run
    ``micro_batches`` times a step; ``lane_samples_per_s`` is one system's rate with its lanes full (or
    its micro-batches as large as the run asks for, where that is smaller)."""

    wafer: Wafer
    systems: int
    batch_per_system: int
    micro_batch: float
    micro_batches: float
    layers: tuple[StreamedLayer, ...]
    swarmx_latency_s: float
    step_s: float
    hardware_flops_per_sample: float
    model_flops_per_sample: float
    wafer_memory_bytes: float
    params: int
    lane_samples_per_s: float
    lanes: float
    """Samples one micro-batch of full lanes holds (:func:`lane_samples`; inf: no token inputs)."""
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
        and backward, for every micro-batch."""
        return self.micro_batches * 2 * STREAMED_WEIGHT_BYTES_PER_PARAM * sum(x.params for x in self.layers)

    @property
    def streamed_gradient_bytes(self) -> float:
        """Gradient bytes each system sends towards MemoryX per step (every expert's, every micro-batch)."""
        return self.micro_batches * STREAMED_GRADIENT_BYTES_PER_PARAM * sum(x.params for x in self.layers)

    @property
    def compute_s(self) -> float:
        """Step time the wafer spends computing, at the calibrated efficiencies."""
        return self.micro_batches * sum(x.forward_compute_s + x.backward_compute_s for x in self.layers)

    @property
    def latency_s(self) -> float:
        """Step time spent on the fixed per-layer latencies (paid by every micro-batch)."""
        return self.micro_batches * sum(2 * x.latency_s for x in self.layers)

    @property
    def io_exposed_s(self) -> float:
        """Step time not covered by compute or latency: waiting on weights/gradients, SwarmX, the input."""
        return self.step_s - self.compute_s - self.latency_s

    @property
    def plateau_samples_per_s(self) -> float:
        """What a very large batch approaches: the rate with the lanes full (compute only for a model
        without lanes), or the input."""
        return self.systems * min(self.input_samples_per_s, self.lane_samples_per_s)

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


def lane_samples(kernels: Sequence[KernelCost], cal: Calibration) -> float:
    """Samples one micro-batch holds: ``micro_batch_tokens`` over the tokens of a sample, at least one
    (unbounded for a model without token inputs)."""
    tokens = input_tokens_per_sample(kernels)
    return math.inf if tokens is None else max(1.0, cal.micro_batch_tokens / tokens)


def weight_streaming(
    layers: Sequence[Layer],
    wafer: str | Wafer = "wse2",
    systems: int = 1,
    batch_per_system: int = 1,
    calibration: Calibration | None = None,
    release: str | None = None,
    micro_batch: int | None = None,
) -> StreamingResult:
    """Model one training step of weight streaming on ``systems`` systems."""
    return weight_streaming_from_kernels(
        group_kernels(layers), wafer, systems, batch_per_system, calibration, release=release, micro_batch=micro_batch
    )


def weight_streaming_from_kernels(
    kernels: Sequence[KernelCost],
    wafer: str | Wafer,
    systems: int,
    batch_per_system: int,
    calibration: Calibration | None,
    release: str | None = None,
    micro_batch: int | None = None,
) -> StreamingResult:
    """:func:`weight_streaming` of a model already grouped into kernels (a plan groups its model once).

    Compute runs at the calibrated efficiencies of ``release``'s generation (the 2.x figures when the
    calibration has none for it, and for ``None``). ``micro_batch``: the samples of a micro-batch the run
    asks for (None: the lanes decide)."""
    w = get_wafer(wafer)
    check_cluster_size(w, systems)
    batch_per_system = check_integer("batch_per_system", batch_per_system, minimum=1)
    if micro_batch is not None:
        micro_batch = check_integer("micro_batch", micro_batch, minimum=1)
    cal = (calibration or fitted()).applied("weight_streaming", release)
    params = sum(k.params for k in kernels)
    if params * MEMORYX.bytes_per_parameter > MEMORYX.max_capacity_bytes:
        raise CapacityError(
            f"{params:.3g} parameters exceed MemoryX's largest configuration ({MEMORYX.max_parameters:.3g} parameters)"
        )
    largest = max(kernels, key=lambda k: k.used_params)
    if max_micro_batch(kernels, w) < 1:
        raise CapacityError(
            f"one sample's activations ({activation_memory_bytes(kernels, 1):.3g} B) and layer "
            f"{largest.name!r} ({largest.used_params:.3g} parameters, double-buffered) do not fit the "
            f"{w.name} wafer ({w.fabric_memory_bytes:.3g} B): csconform keeps every activation the backward pass "
            "reads on the wafer and models no recomputation or offloading, so it cannot plan this sequence length"
        )
    lanes = lane_samples(kernels, cal)
    full = min(lanes, micro_batch or math.inf)  # the largest micro-batch this run runs
    micro = min(batch_per_system, full)
    micro_batches = batch_per_system / micro
    latency = SWARMX.latency_s(systems)
    streamed = _streamed(kernels, w, micro, cal)
    feed = input_samples_per_s(kernels, cal)
    wafer_s = micro_batches * sum(x.forward_s + x.backward_s for x in streamed) + 3 * latency
    step_s = max(wafer_s, batch_per_system / feed)
    if math.isinf(full):  # no lanes and no micro-batch asked for: a huge shard is all compute
        lane_rate = 1 / sum(x.forward_compute_s + x.backward_compute_s for x in _streamed(kernels, w, 1, cal))
    else:
        lane_rate = full / sum(x.forward_s + x.backward_s for x in _streamed(kernels, w, full, cal))
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
        wafer_memory_bytes=activation_memory_bytes(kernels, math.ceil(micro))
        + WEIGHT_BUFFERS * STREAMED_WEIGHT_BYTES_PER_PARAM * largest.used_params,
        params=params,
        lane_samples_per_s=lane_rate,
        lanes=lanes,
        input_samples_per_s=feed,
        calibration=cal,
    )


def _streamed(kernels: Sequence[KernelCost], w: Wafer, samples: float, cal: Calibration) -> tuple[StreamedLayer, ...]:
    """Per-layer times of one micro-batch of ``samples`` samples on one system."""
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
