"""The measured runs the performance model is calibrated on and judged by: the table, its checks, each row's model.

A measured-runs table (the calibration set ``csconform/perf/measured/calibration.csv``, or any CSV
with its columns) lists one training run per row: ``model``, ``layers``, ``d_model``, ``heads``,
``seq_len``, ``global_batch``, ``systems``, ``system`` (CS-1/2/3) and the measured ``samples_per_s``.
Optional columns refine the model: ``execution_mode``, ``release`` (the software release the run
used, empty when its source does not say), ``vocab_size``, ``ffn``, ``kv_heads``, ``tied_embeddings``
(``yes`` when the LM head shares the token embedding's weights, ``no``; empty: the family's default)
and ``config`` (a zoo name or a config file, which then replaces the shape columns); ``source`` names where the run was
published (the paper or the training series; the ``reference`` column gives the exact document), and
``use`` says what the run is for: ``fit`` (empty: the same) or ``judge``, a run no fit ever sees, kept
to judge the predictions.

Each row becomes a model config of its family (told by the model's name: ``bert``, ``llama``,
``neox``/``pythia``, ``gptj``/``gpt-j``, otherwise ``gpt``; see :func:`row_config`) and a
:class:`Run`, planned by the same execution models as ``csconform plan``.

Execution mode: a row that states none is planned in weight streaming. The documents put models
below about one billion parameters in pipelined mode, but the measured runs below a billion that
state no mode (BERT, the 256M and 590M GPT models) behave like weight streaming: the GPT models sit
on the same curve as the larger ones, and BERT's throughput rises seven-fold from batch 128 to
2,048, which a resident pipeline (whose fill is a few dozen samples) cannot produce; the report
shows both predictions.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from csconform.documents import read_text
from csconform.errors import InputFileError, InvalidInputError
from csconform.perf.execution.efficiency import Calibration
from csconform.perf.execution.pipelined import pipelined_from_kernels, pipelined_on_placement
from csconform.perf.execution.streaming import weight_streaming_from_kernels
from csconform.perf.hardware import check_cluster_size, get_wafer
from csconform.perf.models.hf_config import load_model_config, model_from_config
from csconform.perf.models.kernels import KernelCost, group_kernels
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo import canonical_name, get_model
from csconform.perf.placement.columns import Placement
from csconform.perf.releases import parse as parse_release

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
SHIPPED_SOURCE = (
    "Zhang et al., IEEE HPEC 2024 (arXiv 2409.00287, one CS-2), ALCF's public Cerebras training logs "
    "(CS-2 and CS-3, releases 1.7.1 to 2.5.1), DABench-LLM's working logs (CS-2, 2.3.0), an HPC Asia 2027 "
    "artifact's and EPCC's CS-3 logs (2.10.0); each row names its source and reference"
)


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
TIED_EMBEDDINGS = {"yes": True, "no": False}
"""The values of ``tied_embeddings`` (an empty cell: the family's default)."""
USES = ("fit", "judge")
"""What a run is for: fitted by the calibration, or kept out of every fit to judge its predictions."""
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
            use = str(row.get("use", "") or "").strip() or "fit"
            if use not in USES:
                raise InvalidInputError(f"{where}: column 'use' must be one of {', '.join(USES)} or empty, got {use!r}")
            row["use"] = use
            tied = str(row.get("tied_embeddings", "") or "").strip().lower()
            if tied and tied not in TIED_EMBEDDINGS:
                raise InvalidInputError(f"{where}: column 'tied_embeddings' must be yes, no or empty, got {tied!r}")
            row["tied_embeddings"] = tied
            release = str(row.get("release", "") or "").strip()
            if release:
                parse_release(release)  # a release number, or refused naming the cell
            row["release"] = release
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
    added = ("use", "release", "tied_embeddings")
    return pd.DataFrame(rows, columns=[*header, *(c for c in added if c not in header)])


def _text(row: pd.Series, column: str) -> str:
    """A text cell, stripped; empty for an absent column or an empty cell (pandas' NaN)."""
    value = row.get(column)
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()


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
    tied = _text(row, "tied_embeddings").lower()
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
            "tie_word_embeddings": TIED_EMBEDDINGS.get(tied, False),
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
            "tie_word_embeddings": TIED_EMBEDDINGS.get(tied, False),
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
        "tie_word_embeddings": TIED_EMBEDDINGS.get(tied, family == "gpt2"),
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
    stated = _text(row, "execution_mode").lower().replace(" ", "_").replace("-", "_")
    return "pipelined" if stated == "pipelined" else "weight_streaming"


@dataclass(frozen=True)
class Run:
    """A measured row ready to predict: its model, wafer, cluster, batch, mode and release, where it was
    published and what it is for (``use``: fitted, or kept to judge)."""

    id: str
    model: ModelSpec
    wafer: str
    systems: int
    global_batch: int
    mode: str
    measured_samples_per_s: float
    release: str | None = None
    source: str = ""
    use: str = "fit"
    _placements: dict[str, Placement] = field(default_factory=dict, repr=False, compare=False)
    """Placements of a pipelined run by the calibration they were made under (its repr)."""

    @functools.cached_property
    def kernels(self) -> list[KernelCost]:
        """The model's kernels, grouped once: a run is predicted thousands of times while the figures are fitted."""
        return group_kernels(self.model.layers)

    def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
        """Modeled samples/s of this run under calibration ``cal``.

        ``placed_under`` (what the fit's search gives: where it began): a pipelined run is re-timed
        (:func:`pipelined_on_placement`) on the placement made under that calibration, rather than placed
        again (a fraction of a second each time). The placement depends only on ``placed_under``, never
        on which predictions came before, so a fit gives the same figures whatever ran first."""
        if self.mode == "pipelined":
            if placed_under is None:
                return pipelined_from_kernels(
                    self.kernels, self.wafer, batch=self.global_batch, calibration=cal
                ).samples_per_s
            key = repr(placed_under)
            if key not in self._placements:
                self._placements[key] = pipelined_from_kernels(
                    self.kernels, self.wafer, batch=self.global_batch, calibration=placed_under
                ).placement
            placed = pipelined_on_placement(self.kernels, self.wafer, self.global_batch, self._placements[key], cal)
            return placed.samples_per_s
        per_system = self.global_batch // self.systems
        streamed = weight_streaming_from_kernels(self.kernels, self.wafer, self.systems, per_system, cal, self.release)
        return streamed.samples_per_s


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
                release=_text(row, "release") or None,
                source=_text(row, "source"),
                use=_text(row, "use") or "fit",
            )
        )
    return out
