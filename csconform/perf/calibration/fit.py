"""Fit the calibrated figures on measured runs, and predict the runs a fit has not seen.

The figures of :mod:`csconform.perf.execution.efficiency` are fitted with
:func:`scipy.optimize.least_squares` on the log throughput of the measured runs
(:mod:`csconform.perf.calibration.measured_runs`), then every run is predicted again from a fit that
left out its whole group (its model family, its source or its release:
:mod:`csconform.perf.calibration.band`; one fit per group, never one per run). The error of a set of
predictions is ``exp(mean |log(predicted / measured)|)``: 1.10 means 10 % off on (geometric) average.
The fit of the shipped calibration set is stored beside this module, in ``calibration.json``, which
every plan reads.

A fit fits only the figures its runs can inform: ``pipelined_efficiency`` only when a run is
pipelined, and a release generation's figure only for the generations of its weight-streaming runs
that state a release; the rest keep their starting values (1: no difference), which is how a run of
a mode no fitted run had is predicted (a release no fitted run had takes a later one's figure:
:func:`csconform.perf.releases.stand_in`).
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from scipy.optimize import least_squares

from csconform.documents import read_bytes
from csconform.errors import InvalidInputError
from csconform.perf.calibration.measured_runs import MAX_MEASURED_BYTES, SHIPPED_SOURCE, measured_csv
from csconform.perf.execution.efficiency import PARAMETERS, RELEASE_FIGURE, Calibration, release_figure
from csconform.perf.releases import REFERENCE_GENERATION, generation

START = Calibration(
    matmul_efficiency=0.4,
    attention_efficiency=0.2,
    layer_latency_s=5e-4,
    input_tokens_per_s=2e6,
    micro_batch_tokens=2.5e5,
    pipelined_efficiency=1.0,
)
UNITS = {
    "matmul_efficiency": "fraction of peak FLOP/s",
    "attention_efficiency": "fraction of peak FLOP/s",
    "layer_latency_s": "s per weight layer per pass",
    "input_tokens_per_s": "tokens/s per system",
    "micro_batch_tokens": "tokens per system per micro-batch",
    "pipelined_efficiency": "share of the weight-streaming efficiencies",
    RELEASE_FIGURE: "share of the reference efficiencies",
}
MEANINGS = {
    "matmul_efficiency": "share of the wafer's peak a kernel with weights (dense, projections, LM head) reaches",
    "attention_efficiency": "share of the peak the attention core (Q K^T, softmax, x V) reaches",
    "layer_latency_s": "weight streaming: fixed time per weight layer per pass that compute does not hide",
    "input_tokens_per_s": "tokens per second one system's input workers deliver",
    "micro_batch_tokens": "weight streaming: tokens the lanes of one system hold; a larger shard runs as several "
    "micro-batches, each streaming the weights again",
    "pipelined_efficiency": "pipelined mode: the share of the weight-streaming efficiencies a resident kernel reaches",
    RELEASE_FIGURE: "weight streaming in this release: the share of the reference efficiencies (runs that state "
    "no release) it reached",
}
EFFICIENCIES = ("matmul_efficiency", "attention_efficiency")  # fitted in log space, at most 1


class Predictable(Protocol):
    """What the fit needs of a run (:class:`~csconform.perf.calibration.measured_runs.Run` is one)."""

    id: str
    mode: str
    release: str | None
    measured_samples_per_s: float

    def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float: ...


def error(log_ratios: Sequence[float] | np.ndarray) -> float:
    """exp(mean |log(predicted / measured)|): the geometric mean of the ratio taken both ways."""
    return float(np.exp(np.mean(np.abs(log_ratios))))


def worst(log_ratios: Sequence[float] | np.ndarray) -> float:
    """The largest factor by which one prediction is off, either way."""
    return float(np.exp(np.max(np.abs(log_ratios))))


# --- fitting ----------------------------------------------------------------------------------------


MIN_RUNS_PER_RELEASE = 2
"""Fewest weight-streaming runs of a release generation for a figure of its own: a figure fitted on one
run reproduces that run exactly and says nothing about the release (its error is the run's, unseen)."""


def release_runs(data: Sequence[Predictable]) -> dict[str, int]:
    """The weight-streaming runs of each release generation these runs state (the reference's left out)."""
    counts: dict[str, int] = {}
    for run in data:
        if run.mode != "pipelined" and (g := generation(run.release)) != REFERENCE_GENERATION:
            counts[g] = counts.get(g, 0) + 1
    return dict(sorted(counts.items()))


def free_figures(data: Sequence[Predictable]) -> list[str]:
    """The figures these runs can inform, in a fixed order: the system figures (``pipelined_efficiency``
    only with a pipelined run) and one per release generation with at least :data:`MIN_RUNS_PER_RELEASE`
    weight-streaming runs (a generation of fewer takes a stand-in's figure, as a release no run has)."""
    names = [n for n in PARAMETERS if n != "pipelined_efficiency" or any(r.mode == "pipelined" for r in data)]
    generations = [g for g, count in release_runs(data).items() if count >= MIN_RUNS_PER_RELEASE]
    return names + [release_figure(g) for g in generations]


def _to_calibration(x: np.ndarray, names: Sequence[str], base: dict[str, float]) -> Calibration:
    """The figures ``base`` with ``names`` set to exp(x) (a figure in neither: 1, no difference)."""
    return Calibration.from_dict(base | dict(zip(names, np.exp(x).tolist(), strict=True)))


def _residuals(cal: Calibration, data: Sequence[Predictable], placed_under: Calibration | None = None) -> np.ndarray:
    """log(predicted / measured) per run (a pipelined run re-timed on its placement under ``placed_under``
    when one is given); a prediction of 0, infinity or NaN gives a non-finite entry."""
    predicted = np.array([run.predict(cal, placed_under) for run in data])
    measured = np.array([run.measured_samples_per_s for run in data])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(predicted / measured)


def _unpredicted(data: Sequence[Predictable], residuals: np.ndarray) -> str:
    """The runs with a non-finite residual, named for a message."""
    return ", ".join([run.id for run, r in zip(data, residuals, strict=True) if not math.isfinite(r)][:5])


def _search_residuals(
    x: np.ndarray, names: Sequence[str], base: dict[str, float], data: Sequence[Predictable], begin: Calibration
) -> np.ndarray:
    """The residuals at a point of the least-squares search (pipelined runs re-timed on their placement
    at the search's beginning ``begin``, not placed again), which must stay where the figures and the
    predictions are finite, positive floats: runs asking for rates the model reaches at no calibration
    drive a figure to 0 or a prediction to 0, and that is refused, naming the measured rates."""
    try:
        cal = _to_calibration(x, names, base)
    except InvalidInputError as exc:
        reason = str(exc)
    else:
        residuals = _residuals(cal, data, placed_under=begin)
        if np.isfinite(residuals).all():
            return residuals
        reason = f"the model predicts no finite throughput for run(s) {_unpredicted(data, residuals)}"
    rates = [run.measured_samples_per_s for run in data]
    raise InvalidInputError(
        f"no calibration fits these runs: the search for one left the floating-point range ({reason}); "
        f"the measured rates span {min(rates):.3g} to {max(rates):.3g} samples/s"
    )


@dataclass(frozen=True)
class Fit:
    calibration: Calibration
    log_ratios: np.ndarray  # log(predicted / measured) per row, all rows in the fit
    standard_errors: dict[str, float]  # relative (of the figure's value), from the Jacobian; NaN: not determined
    figures: tuple[str, ...] = ()  # the figures this fit fitted (the others kept their starting values)
    release_runs: dict[str, int] | None = None  # weight-streaming runs per release generation (release_runs)


# least_squares' Jacobian is a forward difference, good to about sqrt(machine epsilon) ~ 1.5e-8 of its
# largest singular value; a direction weaker than this ratio cannot be told from none.
DETERMINED_SINGULAR_RATIO = 1e-6


def determined(jacobian: np.ndarray) -> bool:
    """Whether every figure is pinned down: no direction of the Jacobian weaker than
    DETERMINED_SINGULAR_RATIO of its strongest (an all-zero Jacobian pins down nothing)."""
    singular_values = np.linalg.svd(jacobian, compute_uv=False)
    return bool(singular_values.min() > DETERMINED_SINGULAR_RATIO * singular_values.max())


def _standard_errors(jacobian: np.ndarray, variance: float) -> np.ndarray:
    """Relative standard error per figure. A figure no run depends on (a zero column) has none; if the
    others do not pin each other down either, none of them has one."""
    errors = np.full(jacobian.shape[1], np.nan)
    informed = np.linalg.norm(jacobian, axis=0) > 0
    if informed.any() and determined(jacobian[:, informed]):
        sub = jacobian[:, informed]
        errors[informed] = np.sqrt(np.diag(np.linalg.inv(sub.T @ sub) * variance))  # log space = relative
    return errors


def fit(data: Sequence[Predictable], start: Calibration = START) -> Fit:
    """Least squares on log throughput over the figures the runs inform (:func:`free_figures`; fitted in
    log space, efficiencies <= 1). ``start`` is where the search starts; a figure the runs do not
    inform is 1 (no difference), never carried over from ``start``, so a fit knows nothing its runs
    do not say."""
    names = free_figures(data)
    if len(data) <= len(names):
        raise InvalidInputError(f"need more than {len(names)} measured runs to fit {len(names)} figures")
    starting = start.as_dict()
    base = {name: starting[name] for name in PARAMETERS if name != "pipelined_efficiency"}
    x0 = np.log([starting.get(name, 1.0) for name in names])
    upper = np.array([0.0 if name in EFFICIENCIES else np.inf for name in names])
    x0 = np.minimum(x0, upper - 1e-9)
    begin = _to_calibration(x0, names, base)
    start_residuals = _residuals(begin, data)
    if not np.isfinite(start_residuals).all():
        raise InvalidInputError(
            f"the model predicts no finite throughput for run(s) {_unpredicted(data, start_residuals)}"
        )
    search = least_squares(_search_residuals, x0, args=(names, base, data, begin), bounds=(-np.inf, upper), x_scale=1.0)
    cal = _to_calibration(search.x, names, base)
    log_ratios = _residuals(cal, data)  # the full model (the search re-timed pipelined runs on one placement)
    dof = max(1, len(data) - len(names))
    spread = _standard_errors(search.jac, float(np.sum(search.fun**2)) / dof)
    return Fit(cal, log_ratios, dict(zip(names, spread.tolist(), strict=True)), tuple(names), release_runs(data))


def fitted_runs(data: Sequence[Any]) -> list[Any]:
    """The runs a calibration fits: every run but those kept to judge it (``use`` is ``judge``)."""
    return [run for run in data if getattr(run, "use", "fit") != "judge"]


def _parameter_entry(name: str, value: float, fitted: Fit, held_out_fits: Sequence[Calibration]) -> dict[str, Any]:
    values = [c.as_dict().get(name, math.nan) for c in held_out_fits]
    values = [v for v in values if math.isfinite(v)] or [value]
    spread = fitted.standard_errors.get(name, math.nan)
    kind = RELEASE_FIGURE if name not in UNITS else name
    return {
        "value": float(f"{value:.4g}"),
        "unit": UNITS[kind],
        "meaning": MEANINGS[kind],
        "fitted": name in fitted.figures,
        # None when the fit cannot tell (no run depends on it, or a Jacobian without full rank)
        "relative_standard_error": float(f"{spread:.3g}") if math.isfinite(spread) else None,
        "cross_validation_range": [float(f"{min(values):.4g}"), float(f"{max(values):.4g}")],
    }


def calibration_record(
    path: Path,
    full: Fit,
    band: dict[str, Any],
    held_out_fits: Sequence[Calibration],
    today: datetime.date | None = None,
    judged: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The calibration file's contents: values, units, meanings, the data, the fit and its errors, and
    (``band``, from :func:`csconform.perf.calibration.band.bands`) the grouped cross-validation and the
    error band plans state; each figure's range is over ``held_out_fits``, the fits that left a group out.
    ``judged`` (:func:`~csconform.perf.calibration.band.judged_evidence`): what the runs kept to judge say."""
    digest = hashlib.sha256(read_bytes(path, MAX_MEASURED_BYTES, "measured-runs table (CSV)")).hexdigest()
    shipped = Path(path).resolve() == measured_csv().resolve()
    parameters = {
        name: _parameter_entry(name, value, full, held_out_fits) for name, value in full.calibration.as_dict().items()
    }
    record: dict[str, Any] = {
        "fitted_on": (today or datetime.date.today()).isoformat(),
        "data": {
            "file": "csconform/perf/measured/calibration.csv" if shipped else str(path),
            "sha256": digest,
            "rows": len(full.log_ratios),
            "source": SHIPPED_SOURCE if shipped else "measured runs supplied by the user",
        },
        "method": "scipy.optimize.least_squares on log(samples/s), parameters in log space, efficiencies <= 1; "
        "rows without an execution mode planned in weight streaming; rows whose use is 'judge' never fitted",
        "parameters": parameters,
        "fit": {
            "error": float(f"{error(full.log_ratios):.4f}"),
            "worst_row": float(f"{worst(full.log_ratios):.4f}"),
            "held_out_error": band["error"],
            "held_out_worst_row": band["worst"],
            "error_measure": "exp(mean |log(predicted / measured)|)",
        },
        "band": band,
        "release_generations": {
            g: {
                "weight_streaming_runs": count,
                "figure": "fitted"
                if release_figure(g) in full.figures
                else f"not determined (fewer than {MIN_RUNS_PER_RELEASE} runs): the figure of a later release, "
                "or the reference's",
            }
            for g, count in (full.release_runs or {}).items()
        },
    }
    if judged is not None:
        record["judged"] = judged
    return record
