"""Fit the four calibrated figures on measured runs, and predict the runs a fit has not seen.

The four figures of :mod:`csconform.perf.execution.efficiency` are fitted with
:func:`scipy.optimize.least_squares` on the log throughput of the measured runs
(:mod:`csconform.perf.calibration.measured_runs`), then every run is predicted again from a fit that
left it out (leave-one-out cross-validation). The error of a set of predictions is
``exp(mean |log(predicted / measured)|)``: 1.10 means 10 % off on (geometric) average. The fit of
the shipped calibration set is stored beside this module, in ``calibration.json``, which every plan reads.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from csconform.documents import read_bytes
from csconform.errors import InvalidInputError
from csconform.perf.calibration.measured_runs import MAX_MEASURED_BYTES, SHIPPED_SOURCE, Run, measured_csv
from csconform.perf.execution.efficiency import PARAMETERS, Calibration

START = Calibration(matmul_efficiency=0.4, attention_efficiency=0.2, layer_latency_s=5e-4, input_tokens_per_s=2e6)
UNITS = {
    "matmul_efficiency": "fraction of peak FLOP/s",
    "attention_efficiency": "fraction of peak FLOP/s",
    "layer_latency_s": "s per weight layer per pass",
    "input_tokens_per_s": "tokens/s per system",
}
MEANINGS = {
    "matmul_efficiency": "share of the wafer's peak a kernel with weights (dense, projections, LM head) reaches",
    "attention_efficiency": "share of the peak the attention core (Q K^T, softmax, x V) reaches",
    "layer_latency_s": "weight streaming: fixed time per weight layer per pass that compute does not hide",
    "input_tokens_per_s": "tokens per second one system's input workers deliver",
}


def error(log_ratios: Sequence[float] | np.ndarray) -> float:
    """exp(mean |log(predicted / measured)|): the geometric mean of the ratio taken both ways."""
    return float(np.exp(np.mean(np.abs(log_ratios))))


def worst(log_ratios: Sequence[float] | np.ndarray) -> float:
    """The largest factor by which one prediction is off, either way."""
    return float(np.exp(np.max(np.abs(log_ratios))))


# --- fitting ----------------------------------------------------------------------------------------


def _to_calibration(x: np.ndarray) -> Calibration:
    return Calibration(**dict(zip(PARAMETERS, np.exp(x).tolist(), strict=True)))


def _residuals(cal: Calibration, data: Sequence[Run]) -> np.ndarray:
    """log(predicted / measured) per run; a prediction of 0, infinity or NaN gives a non-finite entry."""
    predicted = np.array([run.predict(cal) for run in data])
    measured = np.array([run.measured_samples_per_s for run in data])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(predicted / measured)


def _unpredicted(data: Sequence[Run], residuals: np.ndarray) -> str:
    """The runs with a non-finite residual, named for a message."""
    return ", ".join([run.id for run, r in zip(data, residuals, strict=True) if not math.isfinite(r)][:5])


def _search_residuals(x: np.ndarray, data: Sequence[Run]) -> np.ndarray:
    """The residuals at a point of the least-squares search, which must stay where the figures and the
    predictions are finite, positive floats: runs asking for rates the model reaches at no calibration
    drive a figure to 0 or a prediction to 0, and that is refused, naming the measured rates."""
    try:
        cal = _to_calibration(x)
    except InvalidInputError as exc:
        reason = str(exc)
    else:
        residuals = _residuals(cal, data)
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
    standard_errors: dict[str, float]  # relative (of the parameter's value), from the Jacobian


# least_squares' Jacobian is a forward difference, good to about sqrt(machine epsilon) ~ 1.5e-8 of its
# largest singular value; a direction weaker than this ratio cannot be told from none.
DETERMINED_SINGULAR_RATIO = 1e-6


def determined(jacobian: np.ndarray) -> bool:
    """Whether every figure is pinned down: no direction of the Jacobian weaker than
    DETERMINED_SINGULAR_RATIO of its strongest (an all-zero Jacobian pins down nothing)."""
    singular_values = np.linalg.svd(jacobian, compute_uv=False)
    return bool(singular_values.min() > DETERMINED_SINGULAR_RATIO * singular_values.max())


def fit(data: Sequence[Run], start: Calibration = START) -> Fit:
    """Least squares on log throughput over the four figures (fitted in log space; efficiencies <= 1)."""
    if len(data) <= len(PARAMETERS):
        raise InvalidInputError(f"need more than {len(PARAMETERS)} measured runs to fit {len(PARAMETERS)} figures")
    x0 = np.log([getattr(start, name) for name in PARAMETERS])
    upper = np.array([0.0, 0.0, np.inf, np.inf])  # log efficiency <= 0
    x0 = np.minimum(x0, upper - 1e-9)
    start_residuals = _residuals(_to_calibration(x0), data)
    if not np.isfinite(start_residuals).all():
        raise InvalidInputError(
            f"the model predicts no finite throughput for run(s) {_unpredicted(data, start_residuals)}"
        )
    result = least_squares(_search_residuals, x0, args=(data,), bounds=(-np.inf, upper), x_scale=1.0)
    cal = _to_calibration(result.x)
    dof = max(1, len(data) - len(PARAMETERS))
    variance = float(np.sum(result.fun**2)) / dof
    if not determined(result.jac):
        # too few or too alike rows: some figure is not determined, so none gets a standard error
        spread = np.full(len(PARAMETERS), np.nan)
    else:
        covariance = np.linalg.inv(result.jac.T @ result.jac) * variance
        spread = np.sqrt(np.diag(covariance))  # in log space = relative
    return Fit(cal, np.asarray(result.fun), dict(zip(PARAMETERS, spread.tolist(), strict=True)))


def leave_one_out(
    data: Sequence[Run], start: Calibration = START, progress: Callable[[int, int], None] | None = None
) -> tuple[np.ndarray, list[Calibration]]:
    """log(predicted / measured) of each row from a fit on all the other rows, and those fits."""
    ratios, fits = [], []
    for index, run in enumerate(data):
        held_out = fit([r for i, r in enumerate(data) if i != index], start).calibration
        (ratio,) = _residuals(held_out, [run])
        if not math.isfinite(ratio):
            raise InvalidInputError(f"run {run.id}: the fit on the other runs predicts no finite throughput for it")
        ratios.append(float(ratio))
        fits.append(held_out)
        if progress:
            progress(index + 1, len(data))
    return np.array(ratios), fits


def calibration_record(
    path: Path, full: Fit, loo: np.ndarray, loo_fits: Sequence[Calibration], today: datetime.date | None = None
) -> dict[str, Any]:
    """The calibration file's contents: values, units, meanings, the data, the fit and its errors."""
    digest = hashlib.sha256(read_bytes(path, MAX_MEASURED_BYTES, "measured-runs table (CSV)")).hexdigest()
    shipped = Path(path).resolve() == measured_csv().resolve()
    parameters = {}
    for name in PARAMETERS:
        values = [getattr(c, name) for c in loo_fits]
        parameters[name] = {
            "value": float(f"{getattr(full.calibration, name):.4g}"),
            "unit": UNITS[name],
            "meaning": MEANINGS[name],
            # None when the fit cannot tell (a Jacobian without full rank: too few or too alike rows)
            "relative_standard_error": (
                float(f"{full.standard_errors[name]:.3g}") if math.isfinite(full.standard_errors[name]) else None
            ),
            "leave_one_out_range": [float(f"{min(values):.4g}"), float(f"{max(values):.4g}")],
        }
    return {
        "fitted_on": (today or datetime.date.today()).isoformat(),
        "data": {
            "file": "csconform/perf/measured/calibration.csv" if shipped else str(path),
            "sha256": digest,
            "rows": len(full.log_ratios),
            "source": SHIPPED_SOURCE if shipped else "measured runs supplied by the user",
        },
        "method": "scipy.optimize.least_squares on log(samples/s), parameters in log space, efficiencies <= 1; "
        "rows without an execution mode planned in weight streaming",
        "parameters": parameters,
        "fit": {
            "error": float(f"{error(full.log_ratios):.4f}"),
            "worst_row": float(f"{worst(full.log_ratios):.4f}"),
            "leave_one_out_error": float(f"{error(loo):.4f}"),
            "leave_one_out_worst_row": float(f"{worst(loo):.4f}"),
            "error_measure": "exp(mean |log(predicted / measured)|)",
        },
    }
