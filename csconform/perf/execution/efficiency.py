"""What makes measured runs slower than the peak: a few figures, each with a physical meaning.

The execution models (:mod:`~csconform.perf.execution.streaming`, :mod:`~csconform.perf.execution.pipelined`)
take the hardware figures from the presets and these from the calibration file
``csconform/perf/calibration/calibration.json``, fitted by :mod:`csconform.perf.calibration.fit` on
published measurements (the file records the date, the data, the fit and its grouped cross-validation):

``matmul_efficiency``
    Fraction of the wafer's peak FLOP/s a kernel with weights (a dense layer, the attention
    projections, the LM head) reaches on the core array.
``attention_efficiency``
    Fraction of the peak reached by the attention core (Q K^T, softmax, x V): no weights, narrow
    per-head matrices, a T x T score matrix per head. It is what makes long sequences cost more
    than their FLOPs. The softmax cross-entropy over a head's logits (the vocabulary) is work of
    the same kind and runs at this fraction too.
``layer_latency_s``
    Weight streaming only: fixed time per weight layer per pass (forward, backward) that compute
    does not hide: the wafer switching to the next streamed layer. It is what makes a small batch
    slow (the measured BERT throughput rises 7x from batch 128 to 2,048).
``input_tokens_per_s``
    Tokens per second one system's input workers deliver (appliance-mode-blog: the worker nodes stream the
    training data); a run is never faster than its input.
``micro_batch_tokens``
    Weight streaming only: the tokens one system's lanes hold at once. A larger shard runs as several
    micro-batches, each streaming the weights in and paying the per-layer latency again, so the
    throughput is flat in the batch once the lanes are full (the compiler logs of the measured runs
    name a per-system micro-batch and a number of lanes).
``pipelined_efficiency``
    The share of the weight-streaming efficiencies a kernel reaches in pipelined mode (its own
    rectangle of the wafer, every kernel resident).
``release_efficiency``
    Per release generation (:func:`csconform.perf.releases.generation`: a minor release): the share
    of the reference efficiencies (those of the runs that state no release) weight streaming reached
    in that release. Only the generations of fitted runs have one; any other release takes the figure
    of the nearest later generation that has one, or the reference's.

The system figures are properties of the system, not of a model: the same ones serve every model,
batch, cluster size and wafer generation (generations differ only in their presets).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeGuard

from csconform.documents import check_data, read_document
from csconform.errors import InputFileError, InvalidInputError
from csconform.perf.models.kernels import KernelCost
from csconform.perf.releases import stand_in

PARAMETERS = (
    "matmul_efficiency",
    "attention_efficiency",
    "layer_latency_s",
    "input_tokens_per_s",
    "micro_batch_tokens",
    "pipelined_efficiency",
)
"""The system figures every calibration has; a release generation's figure is ``release_efficiency[G]``."""
RELEASE_FIGURE = "release_efficiency"
CALIBRATION_FILE = "calibration.json"


def release_figure(generation: str) -> str:
    """The flat name of a release generation's figure: ``release_efficiency[1.8]``."""
    return f"{RELEASE_FIGURE}[{generation}]"


def _release_generation(name: str) -> str | None:
    """The generation a flat figure name belongs to (None for a system figure)."""
    prefix = RELEASE_FIGURE + "["
    return name[len(prefix) : -1] if name.startswith(prefix) and name.endswith("]") else None


@dataclass(frozen=True)
class Calibration:
    """The figures (see the module docstring); ``IDEAL`` (peak compute, no latency, unlimited input and
    lanes) is the upper bound. The two mode and release figures default to 1: no difference."""

    matmul_efficiency: float
    attention_efficiency: float
    layer_latency_s: float
    input_tokens_per_s: float
    micro_batch_tokens: float = math.inf
    pipelined_efficiency: float = 1.0
    release_efficiency: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("matmul_efficiency", "attention_efficiency"):
            value = getattr(self, name)
            if not (_number(value) and 0 < value <= 1):
                raise InvalidInputError(f"{name} must be in (0, 1], got {value!r}")
        if not (_number(self.layer_latency_s) and 0 <= self.layer_latency_s < math.inf):
            raise InvalidInputError(f"layer_latency_s must be finite and >= 0, got {self.layer_latency_s!r}")
        for name in ("input_tokens_per_s", "micro_batch_tokens"):
            value = getattr(self, name)
            if not (_number(value) and value > 0):
                raise InvalidInputError(f"{name} must be > 0, got {value!r}")
        factors = {"pipelined_efficiency": self.pipelined_efficiency}
        factors |= {release_figure(g): v for g, v in dict(self.release_efficiency).items()}
        for name, value in factors.items():
            if not (_number(value) and 0 < value < math.inf):
                raise InvalidInputError(f"{name} must be finite and > 0, got {value!r}")
        object.__setattr__(self, "release_efficiency", MappingProxyType(dict(self.release_efficiency)))

    def with_values(self, **values: float) -> Calibration:
        return Calibration.from_dict(self.as_dict() | values)

    def as_dict(self) -> dict[str, float]:
        """Every figure by its flat name: the system figures, then one per release generation."""
        values = {name: float(getattr(self, name)) for name in PARAMETERS}
        return values | {release_figure(g): float(v) for g, v in sorted(self.release_efficiency.items())}

    @classmethod
    def from_dict(cls, values: Mapping[str, float]) -> Calibration:
        """The calibration of :meth:`as_dict`'s flat names (absent mode and release figures: 1)."""
        unknown = [n for n in values if n not in PARAMETERS and _release_generation(n) is None]
        if unknown:
            raise InvalidInputError(f"unknown calibration figure(s): {', '.join(unknown)}")
        releases = {g: values[n] for n in values if (g := _release_generation(n)) is not None}
        return cls(**{n: values[n] for n in PARAMETERS if n in values}, release_efficiency=releases)

    def compute_scale(self, mode: str, release: str | None = None) -> float:
        """How much of the reference weight-streaming efficiencies a run of this mode and release reaches:
        ``pipelined_efficiency`` in pipelined mode, else the figure of the release's generation or of
        its stand-in (:func:`~csconform.perf.releases.stand_in`; 1 when it has none)."""
        if mode == "pipelined":
            return self.pipelined_efficiency
        used = stand_in(release, self.release_efficiency)
        return 1.0 if used is None else self.release_efficiency[used]

    def applied(self, mode: str, release: str | None = None) -> Calibration:
        """The figures an execution model runs with for this mode and release: both efficiencies
        times :meth:`compute_scale` (at most 1), no further mode or release figure."""
        scale = self.compute_scale(mode, release)
        return replace(
            self,
            matmul_efficiency=min(1.0, self.matmul_efficiency * scale),
            attention_efficiency=min(1.0, self.attention_efficiency * scale),
            pipelined_efficiency=1.0,
            release_efficiency={},
        )


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


IDEAL = Calibration(matmul_efficiency=1.0, attention_efficiency=1.0, layer_latency_s=0.0, input_tokens_per_s=math.inf)


PLAUSIBLE = {
    "matmul_efficiency": (0.0, 1.0),
    "attention_efficiency": (0.0, 1.0),
    "layer_latency_s": (0.0, 1.0),
    "input_tokens_per_s": (0.0, 1e12),
    "micro_batch_tokens": (0.0, 1e12),
    "pipelined_efficiency": (0.0, 4.0),
    RELEASE_FIGURE: (0.0, 4.0),
}
"""Range of each fitted figure that a calibration file may hold: an efficiency in (0, 1], at most a
second of latency per layer, at most a trillion tokens per second from one system's input workers or
in one micro-batch, a mode or release at most four times the reference efficiency. A fit outside
these is refused, never written or read."""


def calibration_path() -> Path:
    """The calibration file the package ships (what every plan reads), beside the fit that writes it."""
    return Path(str(resources.files("csconform.perf.calibration") / CALIBRATION_FILE))


def check_calibration_record(record: Any, source: str) -> dict[str, Any]:
    """``record`` if it is a calibration: every number finite, every system figure present and each
    figure plausible (a release generation's too), the band plans state present; else InputFileError."""
    check_data(record, source)
    if not isinstance(record, dict) or not isinstance(record.get("parameters"), dict):
        raise InputFileError(f"{source}: expected a calibration record with 'parameters'")
    releases = [name for name in record["parameters"] if _release_generation(name) is not None]
    unknown = [name for name in record["parameters"] if name not in PARAMETERS and name not in releases]
    if unknown:
        raise InputFileError(f"{source}: unknown figure(s) {', '.join(map(repr, unknown))} in 'parameters'")
    for name in (*PARAMETERS, *releases):
        entry = record["parameters"].get(name)
        value = entry.get("value") if isinstance(entry, dict) else None
        low, high = PLAUSIBLE[RELEASE_FIGURE if name in releases else name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputFileError(f"{source}: parameters.{name}.value must be a finite number, got {value!r}")
        if not (low < value <= high or (name == "layer_latency_s" and value == 0)):
            raise InputFileError(f"{source}: parameters.{name}.value {value!r} lies outside ({low:g}, {high:g}]")
    fit = record.get("fit", {})
    if not isinstance(fit, dict) or not all(
        isinstance(v, int | float) and math.isfinite(v) for v in fit.values() if not isinstance(v, str)
    ):
        raise InputFileError(f"{source}: the 'fit' figures must be finite numbers")
    band = record.get("band")
    if not (
        isinstance(band, dict)
        and isinstance(band.get("classes"), dict)
        and all(_number(band.get(k)) and 0 < band[k] < math.inf for k in ("factor", "worst", "coverage"))
        and isinstance(band.get("fitted_runs_by_wafer"), dict)
        and all(_count(n) for n in band["fitted_runs_by_wafer"].values())
    ):
        raise InputFileError(
            f"{source}: expected a 'band' with a finite factor, worst, coverage, its classes and fitted_runs_by_wafer"
        )
    judged = record.get("judged", {"wafers": {}})
    wafers = judged.get("wafers") if isinstance(judged, dict) else None
    if not isinstance(wafers, dict) or not all(_judged_entry(entry) for entry in wafers.values()):
        raise InputFileError(
            f"{source}: 'judged' must give per wafer its judged runs, median ratio, worst and inside_band"
        )
    return record


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _judged_entry(entry: Any) -> bool:
    """A wafer's entry of the record's ``judged``: run counts, a median ratio and worst ratio above 0."""
    if not isinstance(entry, dict):
        return False
    ratios = [entry.get(k) for k in ("median_ratio", "worst")]
    return all(_count(entry.get(k)) for k in ("judged_runs", "inside_band")) and all(
        _number(r) and 0 < r < math.inf for r in ratios
    )


@functools.cache
def _calibration_record() -> dict[str, Any]:
    path = calibration_path()
    return check_calibration_record(read_document(path, what="calibration file", top="any").data, str(path))


def calibration_record() -> dict[str, Any]:
    """The calibration file: values, units, meanings, date, data and fit statistics."""
    return copy.deepcopy(_calibration_record())


def fitted() -> Calibration:
    """The fitted figures from the calibration file (what every plan uses by default)."""
    record = _calibration_record()["parameters"]
    return Calibration.from_dict({name: float(entry["value"]) for name, entry in record.items()})


def forget_calibration() -> None:
    """Read the calibration file again on next use (after ``csconform calibrate --write-shipped``)."""
    _calibration_record.cache_clear()


def effective_flops(kernel: KernelCost, cal: Calibration) -> tuple[float, float]:
    """Forward and backward FLOPs per sample divided by their efficiencies (peak-equivalent FLOPs).

    Work with weights runs at ``matmul_efficiency``; work without runs at ``attention_efficiency``: the
    attention core (its backward twice its forward, like every other product) and the softmax
    cross-entropy over a scored head's logits, the same exponentials, maxima and sums over a row
    as the attention's softmax over its scores.
    """
    core, loss = kernel.attention_core_forward_flops, kernel.loss_forward_flops
    unweighted_forward = core + loss
    unweighted_backward = 2 * core + kernel.loss_backward_flops
    forward = (kernel.forward_flops - unweighted_forward) / cal.matmul_efficiency
    backward = (kernel.backward_flops - unweighted_backward) / cal.matmul_efficiency
    return (
        forward + unweighted_forward / cal.attention_efficiency,
        backward + unweighted_backward / cal.attention_efficiency,
    )


def input_tokens_per_sample(kernels: Sequence[KernelCost]) -> int | None:
    """Tokens one sample brings in: what the input embedding looks up (None for non-token inputs)."""
    first = kernels[0].layers[0]
    return first.tokens if first.kind == "embedding" else None


def input_samples_per_s(kernels: Sequence[KernelCost], cal: Calibration) -> float:
    """The most samples per second one system's input workers can deliver."""
    tokens = input_tokens_per_sample(kernels)
    return math.inf if tokens is None else cal.input_tokens_per_s / tokens
