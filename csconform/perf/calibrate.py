"""Calibrate the performance model on measured runs, and predict measured runs it has not seen.

A measured-runs table (the calibration set ``csconform/perf/measured/calibration.csv``, or any CSV
with its columns) lists one training run per row: ``model``, ``layers``, ``d_model``, ``heads``,
``seq_len``, ``global_batch``, ``systems``, ``system`` (CS-1/2/3) and the measured ``samples_per_s``.
Optional columns refine the model: ``execution_mode``, ``vocab_size``, ``ffn``, ``kv_heads`` and
``config`` (a zoo name or a config file, which then replaces the shape columns).

Each row becomes a model config of its family (told by the model's name: ``bert``, ``llama``,
``neox``/``pythia``, ``gptj``/``gpt-j``, otherwise ``gpt``; see :func:`row_config`) and is planned
by the same code as ``csconform plan``. The four figures of :mod:`csconform.perf.efficiency` are
fitted with :func:`scipy.optimize.least_squares` on log throughput, then every row is predicted
again from a fit that left it out (leave-one-out cross-validation). The error of a set of
predictions is ``exp(mean |log(predicted / measured)|)``: 1.10 means 10 % off on (geometric) average.

Execution mode: a row that states none is planned in weight streaming. The documents put models
below about one billion parameters in pipelined mode, but the measured runs below a billion (BERT,
the 256M and 590M GPT models) behave like weight streaming: the GPT models sit on the same curve as
the larger ones, and BERT's throughput rises seven-fold from batch 128 to 2,048, which a resident
pipeline (whose fill is a few dozen samples) cannot produce; the report shows both predictions.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from csconform.documents import read_bytes, read_text
from csconform.errors import InputFileError, InvalidInputError
from csconform.perf.efficiency import PARAMETERS, Calibration
from csconform.perf.hardware import check_cluster_size, get_wafer
from csconform.perf.model_config import ModelSpec, load_model_config, model_from_config
from csconform.perf.pipeline import pipelined
from csconform.perf.streaming import weight_streaming
from csconform.perf.zoo import canonical_name, get_model

REQUIRED_COLUMNS = (
    "id",
    "model",
    "layers",
    "d_model",
    "heads",
    "seq_len",
    "global_batch",
    "systems",
    "system",
    "samples_per_s",
)
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


SHIPPED_SOURCE = "Zhang et al., IEEE HPEC 2024, arXiv 2409.00287, Tables IV and V (one CS-2)"


def measured_csv() -> Path:
    """The calibration set shipped with the package."""
    return Path(str(resources.files("csconform.perf") / "measured" / "calibration.csv"))


INTEGER_COLUMNS = {
    "layers": 10_000,
    "d_model": 2**20,
    "heads": 2**16,
    "seq_len": 2**22,
    "global_batch": 2**31,
    "systems": 100_000,
}
"""Integer columns of a measured-runs table and the largest value each may hold (far above any run)."""
OPTIONAL_INTEGER_COLUMNS = {"vocab_size": 2**24, "ffn": 2**22, "kv_heads": 2**16}
MAX_SAMPLES_PER_S = 1e9
"""Largest measured throughput accepted: a billion samples per second is beyond any training run."""
MAX_MEASURED_BYTES = 4 * 2**20


def _integer_cell(text: str, column: str, limit: int, where: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        try:  # pandas writes an integer column with an empty cell as floats: "128.0"
            number = float(text)
        except ValueError:
            number = math.nan
        if not number.is_integer():
            raise InvalidInputError(f"{where}: column {column!r} must be an integer, got {text!r}") from None
        value = int(number)
    if not 1 <= value <= limit:
        raise InvalidInputError(f"{where}: column {column!r} must lie in 1..{limit}, got {text!r}")
    return value


def read_measured(path: str | Path) -> pd.DataFrame:
    """A measured-runs table, every cell the model reads checked: a bad cell is an InputFileError naming
    the file, the line and the column (see :mod:`csconform.documents` for the file itself)."""
    text = read_text(path, MAX_MEASURED_BYTES, "measured-runs table (CSV)")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise InputFileError(f"{path}: empty; expected a header line with {', '.join(REQUIRED_COLUMNS)}") from None
    except csv.Error as exc:
        raise InputFileError(f"{path}: line 1: not a CSV header: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise InputFileError(f"{path}: missing column(s) {', '.join(missing)}")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputFileError(f"{path}: line 1: column(s) {', '.join(repeated)} appear more than once")
    rows: list[dict[str, Any]] = []
    seen_ids: dict[str, int] = {}
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputFileError(f"{path}: line {reader.line_num}: not valid CSV: {exc}") from None
        where = f"{path}: line {reader.line_num}"
        if not any(cell.strip() for cell in cells):
            continue  # a blank line
        if len(cells) != len(header):
            raise InputFileError(f"{where}: {len(cells)} fields, the header has {len(header)}")
        row: dict[str, Any] = dict(zip(header, cells, strict=True))
        try:
            for column, limit in INTEGER_COLUMNS.items():
                row[column] = _integer_cell(row[column], column, limit, where)
            for column, limit in OPTIONAL_INTEGER_COLUMNS.items():
                if row.get(column, "").strip():
                    row[column] = _integer_cell(row[column], column, limit, where)
            try:
                rate = float(row["samples_per_s"])
            except ValueError:
                rate = math.nan
            if not (math.isfinite(rate) and 0 < rate <= MAX_SAMPLES_PER_S):
                raise InvalidInputError(
                    f"{where}: column 'samples_per_s' must be a finite number in (0, {MAX_SAMPLES_PER_S:g}], "
                    f"got {row['samples_per_s']!r}"
                )
            row["samples_per_s"] = rate
        except InvalidInputError as exc:
            raise InputFileError(str(exc)) from None
        run_id = row["id"].strip()
        if not run_id:
            raise InputFileError(f"{where}: column 'id' is empty")
        if run_id in seen_ids:
            raise InputFileError(f"{where}: id {run_id!r} was already used on line {seen_ids[run_id]}")
        seen_ids[run_id] = reader.line_num
        rows.append(row)
    if not rows:
        raise InputFileError(f"{path}: no measured runs")
    return pd.DataFrame(rows, columns=header)


def _optional_int(row: pd.Series, column: str) -> int | None:
    value = row.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return int(value)


def row_config(row: pd.Series) -> dict[str, Any]:
    """The model config a measured row describes: its family's defaults plus the row's shape."""
    name = str(row["model"]).lower().replace("-", "_")
    layers, width, heads, seq = int(row["layers"]), int(row["d_model"]), int(row["heads"]), int(row["seq_len"])
    vocab, ffn, kv = (_optional_int(row, c) for c in ("vocab_size", "ffn", "kv_heads"))
    if "bert" in name:  # the measured BERT runs fine-tune a classifier (SST-2)
        return {
            "model_type": "bert",
            "architectures": ["BertForSequenceClassification"],
            "num_hidden_layers": layers,
            "hidden_size": width,
            "num_attention_heads": heads,
            "intermediate_size": ffn or 4 * width,
            "vocab_size": vocab or 30522,
            "max_position_embeddings": max(512, seq),
        }
    if "llama" in name:
        return {
            "model_type": "llama",
            "num_hidden_layers": layers,
            "hidden_size": width,
            "num_attention_heads": heads,
            "num_key_value_heads": kv or heads,
            "intermediate_size": ffn or 256 * math.ceil(int(8 * width / 3) / 256),  # Llama's multiple_of = 256
            "vocab_size": vocab or 32000,
            "max_position_embeddings": max(4096, seq),
        }
    if "neox" in name or "pythia" in name:
        return {
            "model_type": "gpt_neox",
            "num_hidden_layers": layers,
            "hidden_size": width,
            "num_attention_heads": heads,
            "intermediate_size": ffn or 4 * width,
            "vocab_size": vocab or 50432,
            "max_position_embeddings": max(2048, seq),
        }
    family = "gptj" if "gptj" in name or "gpt_j" in name else "gpt2" if "gpt" in name else None
    if family is None:
        raise InvalidInputError(
            f"row {row['id']}: cannot tell the family of model {row['model']!r} (bert, llama, neox, gptj or gpt); "
            "give a config column"
        )
    return {
        "model_type": family,
        "n_layer": layers,
        "n_embd": width,
        "n_head": heads,
        "n_inner": ffn,
        "vocab_size": vocab or (50400 if family == "gptj" else 50257),
        "n_positions": max(2048, seq),
        "tie_word_embeddings": family == "gpt2",
    }


def row_model(row: pd.Series) -> ModelSpec:
    """The model of a measured row: its ``config`` (zoo name or file) if given, else :func:`row_config`."""
    seq = int(row["seq_len"])
    config = row.get("config")
    if isinstance(config, str) and config.strip():
        try:
            return get_model(canonical_name(config), seq_len=seq)
        except InvalidInputError:
            return load_model_config(config, seq_len=seq)
    return model_from_config(row_config(row), seq_len=seq, name=str(row["model"]))


def row_mode(row: pd.Series) -> str:
    """The execution mode a row states; weight streaming when it states none (see the module docstring)."""
    stated = str(row.get("execution_mode", "") or "").strip().lower().replace(" ", "_").replace("-", "_")
    return "pipelined" if stated == "pipelined" else "weight_streaming"


@dataclass(frozen=True)
class Run:
    """A measured row ready to predict: its model, wafer, cluster, batch and mode."""

    id: str
    model: ModelSpec
    wafer: str
    systems: int
    global_batch: int
    mode: str
    measured_samples_per_s: float

    def predict(self, cal: Calibration) -> float:
        """Modeled samples/s of this run under calibration ``cal``."""
        if self.mode == "pipelined":
            return pipelined(self.model.layers, self.wafer, batch=self.global_batch, calibration=cal).samples_per_s
        per_system = self.global_batch // self.systems
        return weight_streaming(self.model.layers, self.wafer, self.systems, per_system, cal).samples_per_s


def runs(frame: pd.DataFrame) -> list[Run]:
    """Every row of a measured-runs table as a :class:`Run` (a bad row is a clear error naming it)."""
    out = []
    for _, row in frame.iterrows():
        wafer = get_wafer(str(row["system"]))
        systems, batch = int(row["systems"]), int(row["global_batch"])
        check_cluster_size(wafer, systems)
        if batch % systems:
            raise InvalidInputError(f"row {row['id']}: global batch {batch} does not split over {systems} systems")
        out.append(
            Run(
                id=str(row["id"]),
                model=row_model(row),
                wafer=wafer.name,
                systems=systems,
                global_batch=batch,
                mode=row_mode(row),
                measured_samples_per_s=float(row["samples_per_s"]),
            )
        )
    return out


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
