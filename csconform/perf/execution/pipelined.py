"""Layer-pipelined execution on one wafer (pipelined-execution): every kernel resident on its own rectangle.

The model:

* Kernels are the stages of :func:`~csconform.perf.models.kernels.group_kernels` (a layer, or a fused
  block such as one transformer block), in model order.  Each gets a rectangle from
  :func:`~csconform.perf.placement.columns.place_kernels`, which sizes the rectangles to maximise samples/s.
* A kernel's work is its training FLOPs per sample (forward + backward + its weight update
  amortised over the batch, done in place: weights stay in the region) divided by the FLOPs one
  core does per cycle and by the calibrated efficiency of the kernel kind
  (:mod:`csconform.perf.execution.efficiency`: weight kernels and the attention core reach a fraction of the
  peak, the weight-streaming fractions times ``pipelined_efficiency``, fitted on measured pipelined
  runs); on ``a`` cores it takes ``work / a`` cycles per sample.  Its traffic (the
  forward activations and the backward gradients entering and leaving) crosses the region's
  shorter side, one fabric link per row/column; a kernel takes the longer of the two times.
* Memory of a kernel: FP32 weights, optimizer state and gradient accumulator, plus saved
  activations for every sample in flight.  Sample ``s`` runs forward through kernel ``k`` at step
  ``s + k`` and backward at step ``s + k + 2d + 1``, where ``d = K - 1 - k`` is the kernel's depth
  from the end of the pipeline; so a kernel at depth ``d`` holds ``2d + 1`` samples' activations.
* The pipeline fills (the first sample's forward and backward through every kernel: the sum of
  the kernel times) and then runs in steady state at one sample per slowest kernel time.  The
  weights are updated once per batch, so every batch fills and drains the pipeline: a batch of b
  samples takes fill + (b - 1) x slowest kernel time, and samples/s = b / that, rising with the
  batch toward clock / slowest cycles per sample.  Nor can it beat the input: system I/O and the
  input workers (pipelined-execution: samples are streamed to the wafer from the worker nodes) cap it.  The
  continuous optimum of the placement (area relaxation, steady state) gives
  ``bound_samples_per_s``; neither can exceed peak FLOP/s / FLOPs per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from csconform.arguments import check_integer
from csconform.errors import CapacityError, InfeasibleError, InvalidInputError
from csconform.perf.execution.efficiency import Calibration, effective_flops, fitted, input_samples_per_s
from csconform.perf.hardware import Wafer, get_wafer
from csconform.perf.models.kernels import KernelCost, group_kernels
from csconform.perf.models.layer import Layer
from csconform.perf.placement.columns import Fabric, KernelDemand, Placement, Rect, place_kernels


def inflight_samples(kernel_count: int) -> list[int]:
    """Samples whose activations each kernel holds: 2d + 1 at depth d from the end."""
    return [2 * (kernel_count - 1 - k) + 1 for k in range(kernel_count)]


def kernel_memory_bytes(kernels: Sequence[KernelCost]) -> list[float]:
    """Per kernel: weights + optimizer state + in-flight activations."""
    return [
        k.weight_bytes + k.optimizer_state_bytes + n * k.activation_bytes_per_sample
        for k, n in zip(kernels, inflight_samples(len(kernels)), strict=True)
    ]


def pipelined_memory_bytes(layers: Sequence[Layer], optimizer: str = "adam") -> float:
    """Wafer memory the whole model needs in pipelined mode."""
    return float(sum(kernel_memory_bytes(group_kernels(layers, optimizer))))


def fits_pipelined(layers: Sequence[Layer], wafer: str | Wafer = "wse2", optimizer: str = "adam") -> bool:
    """True when weights, optimizer state and in-flight activations fit the wafer's SRAM."""
    return kernels_fit_pipelined(group_kernels(layers, optimizer), wafer)


def kernels_fit_pipelined(kernels: Sequence[KernelCost], wafer: str | Wafer = "wse2") -> bool:
    """:func:`fits_pipelined` of a model already grouped into kernels."""
    return sum(kernel_memory_bytes(kernels)) <= get_wafer(wafer).fabric_memory_bytes


@dataclass(frozen=True)
class PipelineKernel:
    """One placed kernel of the pipeline."""

    name: str
    depth: int
    inflight_samples: int
    memory_bytes: float
    flops_per_sample: float
    rect: Rect
    compute_cycles_per_sample: float
    communication_cycles_per_sample: float

    @property
    def cycles_per_sample(self) -> float:
        return max(self.compute_cycles_per_sample, self.communication_cycles_per_sample)


@dataclass(frozen=True)
class PipelineResult:
    wafer: Wafer
    batch: int
    kernels: tuple[PipelineKernel, ...]
    placement: Placement
    flops_per_sample: float  # executed on the wafer: forward + backward + amortised update
    model_flops_per_sample: float  # forward + backward only
    input_bytes_per_sample: float  # streamed in from the worker nodes over system I/O
    worker_samples_per_s: float = np.inf  # what the input workers deliver (calibrated tokens/s)

    @property
    def slowest_cycles_per_sample(self) -> float:
        return max(k.cycles_per_sample for k in self.kernels)

    @property
    def wafer_samples_per_s(self) -> float:
        """What the placed kernels could sustain: clock / slowest kernel."""
        return self.wafer.clock_hz / self.slowest_cycles_per_sample

    @property
    def input_samples_per_s(self) -> float:
        """What the input can deliver: the workers' rate, and system I/O streaming the samples in."""
        return min(self.wafer.system_io_bytes_per_s / self.input_bytes_per_sample, self.worker_samples_per_s)

    @property
    def batch_s(self) -> float:
        """One batch through the wafer: the fill, then one sample per slowest kernel time."""
        return self.fill_latency_s + (self.batch - 1) * self.slowest_cycles_per_sample / self.wafer.clock_hz

    @property
    def samples_per_s(self) -> float:
        return min(self.batch / self.batch_s, self.input_samples_per_s)

    @property
    def bound_samples_per_s(self) -> float:
        """Continuous optimum over all placements (area relaxation with memory floors), capped by input I/O."""
        return min(self.wafer.clock_hz / self.placement.area_bound_cycles_per_sample, self.input_samples_per_s)

    @property
    def peak_samples_per_s(self) -> float:
        return self.wafer.peak_flops_per_s / self.flops_per_sample

    @property
    def fill_latency_s(self) -> float:
        """Time before the first sample's backward pass has left the first kernel."""
        return sum(k.cycles_per_sample for k in self.kernels) / self.wafer.clock_hz

    @property
    def utilisation(self) -> list[float]:
        """Per kernel, fraction of steady-state time it is busy."""
        slowest = self.slowest_cycles_per_sample
        return [k.cycles_per_sample / slowest for k in self.kernels]

    @property
    def memory_bytes(self) -> float:
        return sum(k.memory_bytes for k in self.kernels)

    @property
    def compute_bound_fraction(self) -> float:
        """Share of kernels whose time is set by compute rather than by fabric traffic."""
        return float(np.mean([k.compute_cycles_per_sample >= k.communication_cycles_per_sample for k in self.kernels]))


def _refuse(kernels: Sequence[KernelCost], wafer: Wafer, reason: str) -> CapacityError:
    params = sum(kernel.params for kernel in kernels)
    return CapacityError(
        f"the model ({params / 1e6:.1f}M parameters) does not fit the {wafer.name} wafer in pipelined "
        f"mode: {reason}; use weight streaming (mode='weight_streaming')"
    )


def pipelined(
    layers: Sequence[Layer],
    wafer: str | Wafer = "wse2",
    batch: int = 1,
    optimizer: str = "adam",
    time_limit_s: float = 10.0,
    calibration: Calibration | None = None,
) -> PipelineResult:
    """Place every kernel of the model on the wafer and model the pipeline (fill, steady state, drain)."""
    return pipelined_from_kernels(group_kernels(layers, optimizer), wafer, batch, time_limit_s, calibration)


def pipelined_from_kernels(
    kernels: Sequence[KernelCost],
    wafer: str | Wafer,
    batch: int,
    time_limit_s: float = 10.0,
    calibration: Calibration | None = None,
) -> PipelineResult:
    """:func:`pipelined` of a model already grouped into kernels (a plan groups its model once).

    The kernels run at the calibrated efficiencies times ``pipelined_efficiency``."""
    w = get_wafer(wafer)
    cal = (calibration or fitted()).applied("pipelined")
    batch = check_integer("batch", batch, minimum=1)
    memory = kernel_memory_bytes(kernels)
    if sum(memory) > w.fabric_memory_bytes:
        raise _refuse(
            kernels,
            w,
            f"it needs {sum(memory) / 1e9:.1f} GB (weights, optimizer state and "
            f"in-flight activations), the wafer has {w.fabric_memory_bytes / 1e9:.1f} GB",
        )
    demands = [
        KernelDemand(k.name, core_cycles_per_sample=f / w.flops_per_core_per_cycle, memory_bytes=m)
        for k, f, m in zip(kernels, _work(kernels, batch, cal), memory, strict=True)
    ]
    edges = [(i, i + 1, kernels[i].output_bytes) for i in range(len(kernels) - 1)]
    fabric = Fabric(w.fabric_width, w.fabric_height, w.memory_per_core_bytes)
    try:
        placement = place_kernels(demands, fabric, edges=edges, time_limit_s=time_limit_s)
    except InfeasibleError as error:
        raise _refuse(kernels, w, str(error)) from error
    return _pipeline(kernels, w, batch, placement, placement.cycles_per_sample, cal)


def pipelined_on_placement(
    kernels: Sequence[KernelCost], wafer: str | Wafer, batch: int, placement: Placement, calibration: Calibration
) -> PipelineResult:
    """The pipeline of ``kernels`` on the rectangles of an earlier ``placement`` of the same kernels, at
    another calibration: each kernel's cycles are its work at these figures over its rectangle's cores.
    No placement is searched, so it is quick (the calibration's fit predicts pipelined runs this way)."""
    w = get_wafer(wafer)
    cal = calibration.applied("pipelined")
    batch = check_integer("batch", batch, minimum=1)
    if len(placement.rects) != len(kernels):
        raise InvalidInputError(f"a placement of {len(placement.rects)} kernels cannot hold {len(kernels)}")
    cycles = [
        f / w.flops_per_core_per_cycle / r.cores
        for f, r in zip(_work(kernels, batch, cal), placement.rects, strict=True)
    ]
    return _pipeline(kernels, w, batch, placement, cycles, cal)


def _work(kernels: Sequence[KernelCost], batch: int, cal: Calibration) -> list[float]:
    """Peak-equivalent FLOPs per sample of each kernel: forward and backward over their efficiencies,
    and the weight update amortised over the batch."""
    return [sum(effective_flops(k, cal)) + k.weight_update_flops / batch / cal.matmul_efficiency for k in kernels]


def _pipeline(
    kernels: Sequence[KernelCost],
    w: Wafer,
    batch: int,
    placement: Placement,
    compute_cycles: Sequence[float],
    cal: Calibration,
) -> PipelineResult:
    """The pipeline of placed kernels whose compute takes ``compute_cycles`` per sample each."""
    depths = [len(kernels) - 1 - i for i in range(len(kernels))]
    placed = tuple(
        PipelineKernel(
            name=k.name,
            depth=d,
            inflight_samples=n,
            memory_bytes=m,
            flops_per_sample=k.training_flops_per_sample(batch),
            rect=r,
            compute_cycles_per_sample=c,
            communication_cycles_per_sample=2
            * (k.input_bytes + k.memory_bytes + k.output_bytes)
            / (min(r.width, r.height) * w.link_bytes_per_cycle),
        )
        for k, d, n, m, r, c in zip(
            kernels,
            depths,
            inflight_samples(len(kernels)),
            kernel_memory_bytes(kernels),
            placement.rects,
            compute_cycles,
            strict=True,
        )
    )
    return PipelineResult(
        wafer=w,
        batch=batch,
        kernels=placed,
        placement=placement,
        flops_per_sample=sum(k.flops_per_sample for k in placed),
        model_flops_per_sample=sum(k.forward_flops + k.backward_flops for k in kernels),
        input_bytes_per_sample=kernels[0].input_bytes,
        worker_samples_per_s=input_samples_per_s(kernels, cal),
    )


def timeline(kernel_count: int, steps: int) -> np.ndarray:
    """Which sample each kernel works on at each step: ``out[k, t] = (forward, backward)`` indices.

    -1 means idle in that direction.  Forward of sample s at kernel k happens at step s + k, its
    backward at step s + k + 2d + 1 (d = K - 1 - k).  Kernel k is first busy at step k, so every
    kernel is busy from step K - 1 on (step K counting from 1): the fill, then the steady state.
    """
    if kernel_count < 1 or steps < 1:
        raise InvalidInputError("timeline needs at least one kernel and one step")
    out = np.full((kernel_count, steps, 2), -1, dtype=int)
    for k in range(kernel_count):
        d = kernel_count - 1 - k
        for t in range(steps):
            if t - k >= 0:
                out[k, t, 0] = t - k
            if t - k - 2 * d - 1 >= 0:
                out[k, t, 1] = t - k - 2 * d - 1
    return out


def steady_state_step(kernel_count: int) -> int:
    """First step (counting from 1) at which every kernel is busy."""
    busy = (timeline(kernel_count, 2 * kernel_count + 2) >= 0).any(axis=2).all(axis=0)
    return int(np.argmax(busy)) + 1
