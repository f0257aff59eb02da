"""``plan``: one call from a model and a wafer to modeled throughput, placement and a breakdown.

The execution mode, unless asked for: weight streaming on a WSE-2 or WSE-3, the mode the measured
runs below a billion parameters behave like (``reports/performance_validation.md``), and pipelined
on a WSE-1, whose original installation runs pipelined only (pipelined-execution#Pipelined
Execution), when the whole model (weights, optimizer state and in-flight activations) fits its SRAM.
Pipelined mode can be asked for on one system whenever the model fits (the documents' mode below
about a billion parameters: appliance-mode-blog#Pipelined and Weight Streaming Execution Modes).

A ``release`` applies what changed between releases (:mod:`csconform.perf.releases`): before 1.9.0
pipelined mode exists and is the mode of a model that fits one system, from 1.9.0 it is refused; and
weight streaming runs at the efficiency the calibration fitted for the release's generation.

Every figure in the breakdown names the preset figures and the formula it comes from; compute runs
at the calibrated efficiencies of :mod:`csconform.perf.execution.efficiency` (the breakdown's
``calibration`` entry gives the values and where they were fitted). A plan names the limit that
binds (``binding_limit``: compute, the per-layer latency, weight streaming I/O, the input workers;
in pipelined mode the slowest kernel's compute or fabric traffic, or the pipeline's fill) and states
the error band of its mode and model class, measured by grouped cross-validation
(:mod:`csconform.perf.calibration.band`). A plan groups its model into kernels once
(:func:`~csconform.perf.models.kernels.group_kernels`) and hands them to every execution model it
asks: the mode's own, the other one for comparison, and the memory check.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from csconform.arguments import check_integer
from csconform.errors import InvalidInputError
from csconform.perf.calibration.band import stated_band, wafer_caveat
from csconform.perf.execution.efficiency import Calibration, calibration_record, fitted
from csconform.perf.execution.pipelined import PipelineResult, kernels_fit_pipelined, pipelined_from_kernels
from csconform.perf.execution.streaming import StreamingResult, weight_streaming_from_kernels
from csconform.perf.hardware import Wafer, check_cluster_size, get_wafer
from csconform.perf.models.kernels import KernelCost, group_kernels
from csconform.perf.models.layer import Layer, total_params
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo import get_model
from csconform.perf.releases import generation, pipelined_supported, stand_in

MODES = ("pipelined", "weight_streaming")
DEFAULT_DESCRIBED_BATCH = 256
PIPELINED_ONLY_WAFER = "wse1"  # the original installation (CS-1) runs pipelined only


@dataclass
class Plan:
    model: str
    wafer: str
    mode: str
    systems: int
    batch: int
    params: int
    active_params: int
    seq_len: int | None
    flops_per_sample: float
    samples_per_s: float
    bound_samples_per_s: float
    fabric: dict[str, int]
    kernels: list[dict[str, Any]]
    breakdown: dict[str, dict[str, Any]]
    binding_limit: str = "compute"
    band: dict[str, Any] = field(default_factory=dict)
    release: str | None = None
    notes: list[str] = field(default_factory=list)
    result: PipelineResult | StreamingResult | None = field(default=None, repr=False, compare=False)

    @property
    def pipeline(self) -> PipelineResult:
        """The pipelined model behind this plan (pipelined plans only)."""
        if not isinstance(self.result, PipelineResult):
            raise InvalidInputError(f"plan of {self.model} is {self.mode}, not pipelined")
        return self.result

    @property
    def streaming(self) -> StreamingResult:
        """The weight-streaming model behind this plan (weight-streaming plans only)."""
        if not isinstance(self.result, StreamingResult):
            raise InvalidInputError(f"plan of {self.model} is {self.mode}, not weight streaming")
        return self.result

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "result"}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _resolve(model: str | ModelSpec | Sequence[Layer], seq_len: int | None) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model if seq_len is None else model.at_seq_len(seq_len)
    if isinstance(model, str):
        return get_model(model, seq_len)
    layers = tuple(model)
    if not layers or not all(isinstance(layer, Layer) for layer in layers):
        raise InvalidInputError("model must be a zoo name, a ModelSpec or a non-empty list of Layer")
    if seq_len is not None:
        raise InvalidInputError("seq_len applies to zoo names and configs; build the description at that length")
    tokens = max(layer.tokens for layer in layers)
    return ModelSpec(
        "described", layers, tokens, DEFAULT_DESCRIBED_BATCH, float(total_params(layers)), "a model description"
    )


def choose_mode(
    kernels: Sequence[KernelCost], wafer: str | Wafer = "wse2", systems: int = 1, release: str | None = None
) -> str:
    """Weight streaming, except pipelined for a model that fits one system of a WSE-1, or of any wafer
    in a release before 1.9.0 (see the module docstring)."""
    pipelined_era = release is not None and pipelined_supported(release)
    if (
        (get_wafer(wafer).name == PIPELINED_ONLY_WAFER or pipelined_era)
        and systems == 1
        and kernels_fit_pipelined(kernels, wafer)
    ):
        return "pipelined"
    return "weight_streaming"


def plan(
    model: str | ModelSpec | Sequence[Layer],
    wafer: str = "wse2",
    mode: str | None = None,
    systems: int = 1,
    batch: int | None = None,
    seq_len: int | None = None,
    time_limit_s: float = 5.0,
    calibration: Calibration | None = None,
    release: str | None = None,
    micro_batch: int | None = None,
) -> Plan:
    """Model ``model`` on ``systems`` systems of ``wafer`` (in ``release``); see the module docstring.
    ``micro_batch``: the samples of a weight-streaming micro-batch the run asks for (None: the lanes
    decide); like the lanes' micro-batches, their count is each system's batch over it, not rounded up."""
    spec = _resolve(model, seq_len)
    cal = calibration or fitted()
    w = get_wafer(wafer)
    check_cluster_size(w, systems)
    if mode is not None and mode not in MODES:
        raise InvalidInputError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    if mode == "pipelined" and not pipelined_supported(release):
        raise InvalidInputError(
            f"release {release} has no pipelined mode: 1.9.0 deprecated it and runs every model in weight "
            "streaming (the Model Zoo 1.9.1 RELEASE-NOTES.md, on 1.9.0); use weight streaming"
        )
    kernels = group_kernels(spec.layers)
    chosen = mode or choose_mode(kernels, w, systems, release)
    if batch is not None:
        batch = check_integer("batch", batch, minimum=1)
    if micro_batch is not None:
        micro_batch = check_integer("micro_batch", micro_batch, minimum=1)
        if mode == "pipelined":
            raise InvalidInputError("a micro-batch applies to weight streaming; pipelined mode runs none")
    if chosen == "pipelined":
        if systems != 1:
            raise InvalidInputError(
                "pipelined mode runs the whole model on one system "
                "(appliance-mode-blog#Pipelined and Weight Streaming Execution Modes); "
                "use weight streaming on a cluster"
            )
        result = _pipelined_plan(spec, kernels, w, batch or spec.default_batch, time_limit_s, cal, release)
        if micro_batch is not None:
            result.notes.append(f"micro-batch {micro_batch} not used: pipelined mode runs no micro-batches")
        if mode is None and w.name != PIPELINED_ONLY_WAFER:
            result.notes.append(
                f"release {release} still runs pipelined mode, the documents' mode for a model that fits one "
                "system (appliance-mode-blog#Pipelined and Weight Streaming Execution Modes); 1.9.0 deprecated it"
            )
        return _released(result, release, cal)
    if batch is None:
        batch = systems * max(1, math.ceil(spec.default_batch / systems))
    if batch % systems:
        raise InvalidInputError(f"global batch {batch} does not split evenly over {systems} systems")
    result = _streaming_plan(spec, kernels, w, systems, batch, cal, release, micro_batch)
    if mode is None and systems == 1 and pipelined_supported(release) and kernels_fit_pipelined(kernels, w):
        result.notes.append(
            "the model also fits the wafer in pipelined mode, the documents' mode below about a billion "
            "parameters (mode='pipelined'); the measured runs of such models behave like weight streaming"
        )
    return _released(result, release, cal)


def _released(result: Plan, release: str | None, cal: Calibration) -> Plan:
    """The plan with its release, and what the release changed said in its notes."""
    result.release = release
    if result.mode == "weight_streaming" and release is not None:
        used = stand_in(release, cal.release_efficiency)
        scale = cal.compute_scale("weight_streaming", release)
        if used is None:
            result.notes.append(
                f"release {release}: no measured run of it or of a later release was fitted; planned at the "
                "reference efficiencies (the runs that state no release)"
            )
        else:
            of = (
                "its own"
                if used == generation(release)
                else f"release {used}'s (no run of {generation(release)} was fitted)"
            )
            result.notes.append(
                f"release {release}: weight streaming at {scale:.3g} of the reference efficiencies, {of}"
            )
    return result


def _parameters_entry(spec: ModelSpec) -> dict[str, Any]:
    """What the model holds and what one token uses (they differ for a mixture of experts)."""
    return {
        "total": spec.params,
        "active_per_token": spec.active_params,
        "formula": "total counts every trainable weight (every expert); active counts the weights one token goes "
        "through (the router's top-k experts and the shared layers); FLOPs follow the active ones, storage, "
        "optimizer state and weight streaming the total",
        "sources": {"model": spec.source},
    }


def _calibration_entry(cal: Calibration) -> dict[str, Any]:
    """The calibrated figures a plan used, and where they come from."""
    if cal == fitted():
        record = calibration_record()
        source = (
            f"csconform/perf/calibration/calibration.json: fitted {record['fitted_on']} on {record['data']['rows']} "
            f"measured runs ({record['data']['source']}); error on held-out groups {record['fit']['held_out_error']}"
        )
    else:
        source = "given by the caller"
    return {
        **cal.as_dict(),
        "formula": "compute time = FLOPs / (efficiency x peak), matmul_efficiency for kernels with weights, "
        "attention_efficiency for the attention core; weight streaming adds layer_latency_s per weight layer "
        "and pass; no run is faster than input_tokens_per_s / tokens per sample",
        "sources": {name: source for name in cal.as_dict()},
    }


def _plan(
    spec: ModelSpec,
    w: Wafer,
    systems: int,
    batch: int,
    result: PipelineResult | StreamingResult,
    *,
    flops_per_sample: float,
    kernels: list[dict[str, Any]],
    breakdown: dict[str, dict[str, Any]],
    cal: Calibration,
    notes: list[str],
) -> Plan:
    """A plan of ``spec``: the model's own figures, those its execution model found (``result``), the
    limit that binds and the error band of its mode and model class."""
    mode = "pipelined" if isinstance(result, PipelineResult) else "weight_streaming"
    limit = binding_limit(result)
    if limit == "input":
        notes = [*notes, _input_note(result)]
    caveat = wafer_caveat(w.name) if cal == fitted() else None
    if caveat is not None:
        notes = [*notes, caveat]
    return Plan(
        model=spec.name,
        wafer=w.name,
        mode=mode,
        systems=systems,
        batch=batch,
        params=spec.params,
        active_params=spec.active_params,
        seq_len=spec.seq_len,
        flops_per_sample=flops_per_sample,
        samples_per_s=result.samples_per_s,
        bound_samples_per_s=result.bound_samples_per_s,
        fabric={"width": w.fabric_width, "height": w.fabric_height},
        kernels=kernels,
        breakdown={**breakdown, "parameters": _parameters_entry(spec), "calibration": _calibration_entry(cal)},
        binding_limit=limit,
        band=stated_band(mode, spec.family, w.name),
        notes=[*spec.notes, *notes],
        result=result,
    )


LIMITS = ("compute", "latency", "io", "input", "fill", "communication")
"""What can bind a plan: compute at the calibrated efficiencies; weight streaming's per-layer latency or
its weight and gradient traffic (``io``); the input workers; a pipeline's fill, or its slowest kernel's
fabric traffic (``communication``)."""


def binding_limit(result: PipelineResult | StreamingResult) -> str:
    """The limit (:data:`LIMITS`) that sets a result's samples/s: the input workers when they do, else
    the largest share of a weight-streaming step, or what sets a pipeline's batch time."""
    if isinstance(result, StreamingResult):
        if result.input_bound:
            return "input"
        shares = {"compute": result.compute_s, "latency": result.latency_s, "io": result.io_exposed_s}
        return max(shares, key=lambda name: shares[name])
    if result.samples_per_s >= result.input_samples_per_s * (1 - 1e-12):
        return "input"
    steady_s = (result.batch - 1) * result.slowest_cycles_per_sample / result.wafer.clock_hz
    if result.fill_latency_s > steady_s:
        return "fill"
    slowest = max(result.kernels, key=lambda k: k.cycles_per_sample)
    return (
        "compute" if slowest.compute_cycles_per_sample >= slowest.communication_cycles_per_sample else "communication"
    )


def _input_note(result: PipelineResult | StreamingResult) -> str:
    per_system = result.input_samples_per_s
    return (
        f"the input binds: one system's input workers deliver at most {per_system:.4g} samples/s (input_tokens_per_s "
        "over the tokens of a sample); a faster wafer would not help, more input workers would"
    )


def _pipelined_plan(
    spec: ModelSpec,
    kernels: Sequence[KernelCost],
    w: Wafer,
    batch: int,
    time_limit_s: float,
    cal: Calibration,
    release: str | None,
) -> Plan:
    result = pipelined_from_kernels(kernels, w, batch=batch, time_limit_s=time_limit_s, calibration=cal)
    streamed = weight_streaming_from_kernels(kernels, w, 1, batch, cal, release).samples_per_s
    placed = [
        {
            "name": k.name,
            "x": k.rect.x,
            "y": k.rect.y,
            "width": k.rect.width,
            "height": k.rect.height,
            "cores": k.rect.cores,
            "samples_per_s": w.clock_hz / k.cycles_per_sample,
            "utilisation": u,
            "depth": k.depth,
            "inflight_samples": k.inflight_samples,
            "memory_bytes": k.memory_bytes,
        }
        for k, u in zip(result.kernels, result.utilisation, strict=True)
    ]
    memory = result.memory_bytes
    slowest = max(result.kernels, key=lambda k: k.cycles_per_sample)
    breakdown = {
        "compute": {
            "flops_per_sample": result.flops_per_sample,
            "model_flops_per_sample": result.model_flops_per_sample,
            "peak_flops_per_s": w.peak_flops_per_s,
            "peak_samples_per_s": result.peak_samples_per_s,
            "slowest_kernel": slowest.name,
            "slowest_cycles_per_sample": result.slowest_cycles_per_sample,
            "fill_latency_s": result.fill_latency_s,
            "batch_s": result.batch_s,
            "wafer_samples_per_s": result.wafer_samples_per_s,
            "input_samples_per_s": result.input_samples_per_s,
            "placement_bound_ratio": result.placement.bound_ratio,
            "model_flops_utilisation": result.samples_per_s * result.model_flops_per_sample / w.peak_flops_per_s,
            "formula": "samples_per_s = min(batch / (fill + (batch - 1) x max_k cycles_k / clock_hz), input); "
            "fill = sum_k cycles_k / clock_hz; cycles_k = max(compute, communication); "
            "compute_k = flops_k / efficiency / (flops_per_core_per_cycle x cores_k); "
            "input = min(system_io / input bytes, input_tokens_per_s / tokens) per sample",
            "sources": {
                n: w.source(n)
                for n in ("clock_hz", "flops_per_core_per_cycle", "fabric_width", "fabric_height", "peak_flops_per_s")
            },
        },
        "communication": {
            "link_bytes_per_cycle": w.link_bytes_per_cycle,
            "max_communication_cycles_per_sample": max(k.communication_cycles_per_sample for k in result.kernels),
            "communication_bound_kernels": [
                k.name for k in result.kernels if k.communication_cycles_per_sample > k.compute_cycles_per_sample
            ],
            "formula": "communication_k = 2 (input + output bytes) / (min(width, height) x link_bytes_per_cycle)",
            "sources": {
                "link_bytes_per_cycle": w.source("link_bytes_per_cycle"),
                "fabric_bits_per_s": w.source("fabric_bits_per_s"),
            },
        },
        "memory": {
            "required_bytes": memory,
            "available_bytes": w.fabric_memory_bytes,
            "formula": "sum_k weights + optimizer state + gradient accumulator + (2 d_k + 1) x activations_k",
            "sources": {
                "memory_per_core_bytes": w.source("memory_per_core_bytes"),
                "fabric_memory_bytes": w.source("fabric_memory_bytes"),
            },
        },
    }
    return _plan(
        spec,
        w,
        1,
        batch,
        result,
        flops_per_sample=result.flops_per_sample,
        kernels=placed,
        breakdown=breakdown,
        cal=cal,
        notes=[
            "every kernel resident on its own rectangle; weights stay in their region",
            f"pipelined kernels run at {cal.pipelined_efficiency:.3g} of the weight-streaming efficiencies "
            "(pipelined_efficiency, fitted on the measured pipelined runs); weight streaming would give "
            f"{streamed:.4g} samples/s here",
        ],
    )


def _streaming_plan(
    spec: ModelSpec,
    kernels: Sequence[KernelCost],
    w: Wafer,
    systems: int,
    batch: int,
    cal: Calibration,
    release: str | None,
    micro_batch: int | None,
) -> Plan:
    result = weight_streaming_from_kernels(kernels, w, systems, batch // systems, cal, release, micro_batch)
    streamed = [
        {
            "name": x.name,
            "x": 0,
            "y": 0,
            "width": w.fabric_width,
            "height": w.fabric_height,
            "cores": w.fabric_cores,
            "samples_per_s": result.micro_batch * systems / (x.forward_s + x.backward_s),
            "occupancy_s": result.micro_batches * (x.forward_s + x.backward_s),
            "bound": x.bound,
        }
        for x in result.layers
    ]
    breakdown = {
        "compute": {
            "flops_per_sample": result.hardware_flops_per_sample,
            "model_flops_per_sample": result.model_flops_per_sample,
            "compute_s": result.compute_s,
            "latency_s": result.latency_s,
            "step_s": result.step_s,
            "peak_flops_per_s": w.peak_flops_per_s,
            "model_flops_utilisation": result.samples_per_s
            * result.model_flops_per_sample
            / (systems * w.peak_flops_per_s),
            "input_bound": result.input_bound,
            "lane_samples_per_s": result.lane_samples_per_s,
            "formula": "layer time = max(micro-batch x flops / (efficiency x peak), weights in, gradients out) "
            "+ weight layers x layer_latency_s, forward and backward; backward recomputes the layer's forward "
            "from its saved input; the shard runs as max(1, shard tokens / micro_batch_tokens) micro-batches, "
            "each paying every layer time; step >= shard tokens / input_tokens_per_s",
            "sources": {n: w.source(n) for n in ("clock_hz", "flops_per_core_per_cycle", "peak_flops_per_s")},
        },
        "communication": {
            "system_io_bytes_per_s": w.system_io_bytes_per_s,
            "io_exposed_s": result.io_exposed_s,
            "io_bound_layers": [x.name for x in result.layers if x.bound == "io"],
            "swarmx_latency_s": result.swarmx_latency_s,
            "streamed_weight_bytes_per_step": result.streamed_weight_bytes,
            "streamed_gradient_bytes_per_step": result.streamed_gradient_bytes,
            "formula": "weights in = params x 2 B / system I/O; gradients out = params x 4 B / system I/O; "
            "every weight streams in twice per micro-batch (forward and backward) and every gradient out once, all "
            "experts of a mixture of experts included; SwarmX depth ceil(log2 N) x hop latency paid 3 times per step",
            "sources": {"system_io_bytes_per_s": w.source("system_io_bytes_per_s")},
        },
        "memory": {
            "wafer_bytes": result.wafer_memory_bytes,
            "available_bytes": w.fabric_memory_bytes,
            "micro_batch": result.micro_batch,
            "micro_batches": result.micro_batches,
            "memoryx_bytes": result.params * 20.0,
            "formula": "micro_batch x (layer-input checkpoints + largest working set) + 2 x largest layer "
            "in 16-bit; MemoryX holds 20 B per parameter (2.4 PB / 120T) and runs the optimizer",
            "sources": {
                "fabric_memory_bytes": w.source("fabric_memory_bytes"),
                "memoryx": "public-facts#Hardware: MemoryX holds 4 TB to 2.4 PB (up to 120T parameters)",
            },
        },
    }
    return _plan(
        spec,
        w,
        systems,
        batch,
        result,
        flops_per_sample=result.hardware_flops_per_sample,
        kernels=streamed,
        breakdown=breakdown,
        cal=cal,
        notes=[
            "one layer at a time occupies the whole fabric; kernels are listed in streaming order",
            *([] if micro_batch is None else [_micro_batch_note(micro_batch, result)]),
        ],
    )


def _micro_batch_note(asked: int, result: StreamingResult) -> str:
    """What the micro-batch a run asks for does to its step: more micro-batches than the lanes need, or
    nothing (a micro-batch the lanes cannot hold runs at the lanes)."""
    lanes = result.lanes
    if asked >= lanes:
        return (
            f"micro-batch {asked} asked for; the lanes hold {lanes:.4g} samples (micro_batch_tokens, fitted), so "
            f"the step runs {result.micro_batches:.3g} micro-batch(es) of {result.micro_batch:.4g}"
        )
    needed = max(1.0, result.batch_per_system / lanes)
    return (
        f"micro-batch {asked} asked for: {result.micro_batches:.3g} micro-batch(es) a step where the lanes "
        f"({lanes:.4g} samples, micro_batch_tokens, fitted) would need {needed:.3g}; "
        "each pays the per-layer latency and streams the weights again"
    )
