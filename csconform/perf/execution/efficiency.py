"""What makes measured runs slower than the peak: four figures, each with a physical meaning.

The execution models (:mod:`~csconform.perf.execution.streaming`, :mod:`~csconform.perf.execution.pipelined`)
take the hardware figures from the presets and these four from the calibration file
``csconform/perf/calibration/calibration.json``, fitted by :mod:`csconform.perf.calibration.fit` on
published measurements (the file records the date, the data and the fit):

``matmul_efficiency``
    Fraction of the wafer's peak FLOP/s a kernel with weights (a dense layer, the attention
    projections, the LM head) reaches on the core array.
``attention_efficiency``
    Fraction of the peak reached by the attention core (Q K^T, softmax, x V): no weights, narrow
    per-head matrices, a T x T score matrix per head. It is what makes long sequences cost more
    than their FLOPs.
``layer_latency_s``
    Weight streaming only: fixed time per weight layer per pass (forward, backward) that compute
    does not hide: the wafer switching to the next streamed layer. It is what makes a small batch
    slow (the measured BERT throughput rises 7x from batch 128 to 2,048).
``input_tokens_per_s``
    Tokens per second one system's input workers deliver (appliance-mode-blog: the worker nodes stream the
    training data); a run is never faster than its input.

Every one is a property of the system, not of a model: the same four figures serve every model,
batch, cluster size and wafer generation (generations differ only in their presets).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from csconform.documents import check_data, read_document
from csconform.errors import InputFileError, InvalidInputError
from csconform.perf.models.kernels import KernelCost

PARAMETERS = ("matmul_efficiency", "attention_efficiency", "layer_latency_s", "input_tokens_per_s")
CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class Calibration:
    """The four figures; ``IDEAL`` (peak compute, no latency, unlimited input) is the upper bound."""

    matmul_efficiency: float
    attention_efficiency: float
    layer_latency_s: float
    input_tokens_per_s: float

    def __post_init__(self) -> None:
        for name in ("matmul_efficiency", "attention_efficiency"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value <= 1):
                raise InvalidInputError(f"{name} must be in (0, 1], got {value!r}")
        if not (isinstance(self.layer_latency_s, int | float) and 0 <= self.layer_latency_s < math.inf):
            raise InvalidInputError(f"layer_latency_s must be finite and >= 0, got {self.layer_latency_s!r}")
        if not (isinstance(self.input_tokens_per_s, int | float) and self.input_tokens_per_s > 0):
            raise InvalidInputError(f"input_tokens_per_s must be > 0, got {self.input_tokens_per_s!r}")

    def with_values(self, **values: float) -> Calibration:
        return replace(self, **values)

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


IDEAL = Calibration(matmul_efficiency=1.0, attention_efficiency=1.0, layer_latency_s=0.0, input_tokens_per_s=math.inf)


PLAUSIBLE = {
    "matmul_efficiency": (0.0, 1.0),
    "attention_efficiency": (0.0, 1.0),
    "layer_latency_s": (0.0, 1.0),
    "input_tokens_per_s": (0.0, 1e12),
}
"""Range of each fitted figure that a calibration file may hold: an efficiency in (0, 1], at most a
second of latency per layer, at most a trillion tokens per second from one system's input workers.
A fit outside these is refused, never written or read."""


def calibration_path() -> Path:
    """The calibration file the package ships (what every plan reads), beside the fit that writes it."""
    return Path(str(resources.files("csconform.perf.calibration") / CALIBRATION_FILE))


def check_calibration_record(record: Any, source: str) -> dict[str, Any]:
    """``record`` if it is a calibration: every number finite, the four figures plausible; else InputFileError."""
    check_data(record, source)
    if not isinstance(record, dict) or not isinstance(record.get("parameters"), dict):
        raise InputFileError(f"{source}: expected a calibration record with 'parameters'")
    for name in PARAMETERS:
        entry = record["parameters"].get(name)
        value = entry.get("value") if isinstance(entry, dict) else None
        low, high = PLAUSIBLE[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputFileError(f"{source}: parameters.{name}.value must be a finite number, got {value!r}")
        if not (low < value <= high or (name == "layer_latency_s" and value == 0)):
            raise InputFileError(f"{source}: parameters.{name}.value {value!r} lies outside ({low:g}, {high:g}]")
    fit = record.get("fit", {})
    if not isinstance(fit, dict) or not all(
        isinstance(v, int | float) and math.isfinite(v) for v in fit.values() if not isinstance(v, str)
    ):
        raise InputFileError(f"{source}: the 'fit' figures must be finite numbers")
    return record


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
    return Calibration(**{name: float(record[name]["value"]) for name in PARAMETERS})


def forget_calibration() -> None:
    """Read the calibration file again on next use (after ``csconform calibrate --write-shipped``)."""
    _calibration_record.cache_clear()


def effective_flops(kernel: KernelCost, cal: Calibration) -> tuple[float, float]:
    """Forward and backward FLOPs per sample divided by their efficiencies (peak-equivalent FLOPs).

    The attention core's backward is twice its forward, like every other product.
    """
    core = kernel.attention_core_forward_flops
    forward = (kernel.forward_flops - core) / cal.matmul_efficiency + core / cal.attention_efficiency
    backward = (kernel.backward_flops - 2 * core) / cal.matmul_efficiency + 2 * core / cal.attention_efficiency
    return forward, backward


def input_tokens_per_sample(kernels: Sequence[KernelCost]) -> int | None:
    """Tokens one sample brings in: what the input embedding looks up (None for non-token inputs)."""
    first = kernels[0].layers[0]
    return first.tokens if first.kind == "embedding" else None


def input_samples_per_s(kernels: Sequence[KernelCost], cal: Calibration) -> float:
    """The most samples per second one system's input workers can deliver."""
    tokens = input_tokens_per_sample(kernels)
    return math.inf if tokens is None else cal.input_tokens_per_s / tokens
