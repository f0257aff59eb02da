"""The calibration's reading of a measured-runs table, its least-squares fit and its record, checked
against what csconform/perf/calibration/ documents: a bad cell is an InputFileError naming the file,
the line and the column; the fit starts from the figures it is given (moved just inside the bounds
when on them) and its standard errors come from the Jacobian of the log residuals.

The fit is checked on runs whose modelled throughput is a product of powers of the five system
figures a weight-streaming run can inform (:data:`FIGURES`), so
that log throughput is linear in the fitted parameters: the least-squares answer and its standard
errors are then those of ordinary linear least squares, computed here with numpy.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from model_refusals import names

import csconform.perf.calibration.band as band_module
import csconform.perf.calibration.fit as calibrate
from csconform.errors import InputFileError, InvalidInputError
from csconform.perf.calibration.band import (
    MAX_FOLDS,
    GroupedValidation,
    HeldOut,
    bands,
    family_class,
    grouped_cross_validation,
    judged_evidence,
)
from csconform.perf.calibration.fit import calibration_record, determined, fit
from csconform.perf.calibration.measured_runs import (
    SHIPPED_SOURCE,
    measured_csv,
    read_measured,
    row_config,
    row_model,
    runs,
)
from csconform.perf.execution.efficiency import PARAMETERS, Calibration
from csconform.perf.execution.pipelined import pipelined

HEADER = "id,model,layers,d_model,heads,seq_len,global_batch,systems,system,samples_per_s"
GOOD = "r1,gpt,2,256,4,128,8,1,CS-2,3.5"


def _table(tmp_path: Path, *lines: str, name: str = "runs.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(InputFileError) as refused:
        read_measured(path)
    return str(refused.value)


# --- the measured-runs table ----------------------------------------------------------------------


def test_a_missing_table_is_named_as_a_measured_runs_table(tmp_path) -> None:
    missing = tmp_path / "absent.csv"
    refusal = _refusal(missing)  # the reader's "file not found" is pinned in tests/unit/files/test_documents.py
    assert refusal.startswith(f"{missing}: ") and "measured-runs table (CSV)" in refusal


def test_an_empty_table_asks_for_the_header(tmp_path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("", encoding="utf-8")
    assert _refusal(path) == (
        f"{path}: empty; expected a header line with id, model, layers, d_model, heads, seq_len, global_batch, "
        "systems, system, samples_per_s"
    )


def test_a_header_or_line_the_csv_reader_cannot_read_is_named(tmp_path) -> None:
    too_long = "x" * 200_000  # beyond the csv module's field size limit
    path = _table(tmp_path, f"{HEADER},{too_long}")
    assert _refusal(path).startswith(f"{path}: line 1: not a CSV header: field larger than field limit")
    path = _table(tmp_path, HEADER, GOOD, f"r2,{too_long}")
    assert _refusal(path).startswith(f"{path}: line 3: not valid CSV: field larger than field limit")


def test_missing_and_repeated_columns_are_listed(tmp_path) -> None:
    path = _table(tmp_path, "id,model,layers,d_model,seq_len,global_batch,systems,samples_per_s", "x")
    assert _refusal(path) == f"{path}: missing column(s) heads, system"
    path = _table(tmp_path, f"{HEADER},model", GOOD + ",gpt")
    assert _refusal(path) == f"{path}: line 1: column(s) model appear more than once"
    path = _table(tmp_path, f"{HEADER},model,layers", GOOD + ",gpt,2")
    refusal = _refusal(path)  # two columns given twice: each named, the line's wording pinned just above
    assert refusal.startswith(f"{path}: line 1: ") and not names(refusal, "layers", "model")


def test_blank_lines_are_skipped_not_the_end_of_the_table(tmp_path) -> None:
    frame = read_measured(_table(tmp_path, HEADER, GOOD, "", " , ,", "r2,gpt,3,256,4,128,8,1,CS-2,4"))
    assert frame["id"].tolist() == ["r1", "r2"]


def test_a_row_with_the_wrong_number_of_fields_is_named(tmp_path) -> None:
    path = _table(tmp_path, HEADER, GOOD, "r2,gpt,2")
    assert _refusal(path) == f"{path}: line 3: 3 fields, the header has 10"


def test_a_cell_keeps_its_line_breaks_as_written(tmp_path) -> None:
    """The CSV module reads quoted cells with embedded line breaks only when the text is not translated."""
    path = tmp_path / "runs.csv"
    path.write_bytes((HEADER + '\r\n"r\r\n1",gpt,2,256,4,128,8,1,CS-2,3.5\r\n').encode())
    assert read_measured(path)["id"].tolist() == ["r\r\n1"]


def test_a_table_with_carriage_return_line_ends_reads_as_one_with_newlines(tmp_path) -> None:
    """Old Mac spreadsheets end lines with a bare carriage return; the rows are the same as with newlines."""
    lines = (HEADER, GOOD, "r2,gpt,3,256,4,128,8,1,CS-2,4")
    unix = _table(tmp_path, *lines)
    mac = tmp_path / "mac.csv"
    mac.write_bytes(("\r".join(lines) + "\r").encode())
    frame = read_measured(mac)
    assert frame["id"].tolist() == ["r1", "r2"]
    pd.testing.assert_frame_equal(frame, read_measured(unix))


def _bad_cell(tmp_path: Path, cells: dict[str, str]) -> tuple[Path, str]:
    """A table whose third line has ``cells``, and the refusal of it."""
    columns = HEADER.split(",") + ["ffn", "kv_heads", "vocab_size", "tied_embeddings", "use"]
    good = dict(zip(columns, GOOD.split(",") + ["", "", "", "", ""], strict=True))
    bad = {**good, "id": "r2", **cells}
    path = _table(tmp_path, ",".join(columns), ",".join(good.values()), ",".join(bad[c] for c in columns))
    return path, _refusal(path)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"layers": "two"}, "column 'layers' must be an integer, got 'two'"),
        ({"layers": "0"}, "column 'layers' must lie in 1..10000, got '0'"),
        ({"samples_per_s": "fast"}, "column 'samples_per_s' must be a finite number in (0, 1e+09], got 'fast'"),
        ({"use": "train"}, "column 'use' must be one of fit, judge or empty, got 'train'"),
        ({"tied_embeddings": "maybe"}, "column 'tied_embeddings' must be yes, no or empty, got 'maybe'"),
        ({"id": " "}, "column 'id' is empty"),
    ],
)
def test_each_bad_cell_refusal_reads(tmp_path, cells: dict[str, str], message: str) -> None:
    """The wording of each template, once; the table below asserts what the others name."""
    path, refusal = _bad_cell(tmp_path, cells)
    assert refusal == f"{path}: line 3: {message}"


@pytest.mark.parametrize(
    ("cells", "words"),
    [
        ({"layers": "2.5"}, ("'2.5'",)),
        ({"layers": "10001"}, ("1..10000", "'10001'")),
        ({"d_model": "-256"}, ("1..1048576", "'-256'")),
        ({"ffn": "many"}, ("'many'",)),
        ({"kv_heads": "0"}, ("1..65536", "'0'")),
        ({"vocab_size": "16777217"}, ("1..16777216", "'16777217'")),
        ({"samples_per_s": "0"}, ("1e+09", "'0'")),
        ({"samples_per_s": "-3"}, ("1e+09", "'-3'")),
        ({"samples_per_s": "inf"}, ("1e+09", "'inf'")),
        ({"samples_per_s": "1e9.5"}, ("1e+09", "'1e9.5'")),
    ],
)
def test_a_bad_cell_is_named_by_file_line_and_column(tmp_path, cells: dict[str, str], words: tuple[str, ...]) -> None:
    path, refusal = _bad_cell(tmp_path, cells)
    column = next(iter(cells))
    assert refusal.startswith(f"{path}: line 3: ") and not names(refusal, repr(column), *words), refusal


def test_a_repeated_id_names_the_line_that_first_used_it(tmp_path) -> None:
    path = _table(tmp_path, HEADER, GOOD, GOOD.replace("r1", "r0"), GOOD)
    assert _refusal(path) == f"{path}: line 4: id 'r1' was already used on line 2"


def test_the_cells_the_model_reads_become_numbers_at_their_limits(tmp_path) -> None:
    path = _table(
        tmp_path,
        HEADER + ",ffn,kv_heads,vocab_size",
        "r1,gpt,10000,256.0,4,128,8,1,CS-2,1e9,1024,2.0,",  # pandas writes integers as 2.0 beside empty cells
    )
    frame = read_measured(path)
    row = frame.iloc[0]
    assert (row["layers"], row["d_model"], row["ffn"], row["kv_heads"], row["vocab_size"]) == (10000, 256, 1024, 2, "")
    assert row["samples_per_s"] == 1e9 and isinstance(row["samples_per_s"], float)
    added = ["use", "release", "tied_embeddings"]
    assert list(frame.columns) == HEADER.split(",") + ["ffn", "kv_heads", "vocab_size", *added]
    assert (row["use"], row["release"], row["tied_embeddings"]) == ("fit", "", "")


# --- a row's model and prediction -----------------------------------------------------------------


@pytest.mark.parametrize("width", [4040, 4096, 5120, 1000, 257])
def test_llama_rows_round_the_ffn_up_to_a_multiple_of_256(width: int) -> None:
    """Llama's feed-forward width: two thirds of 4 * d_model, rounded up to a multiple of 256."""
    config = row_config(
        pd.Series({"id": "r", "model": "llama", "layers": 2, "d_model": width, "heads": 1, "seq_len": 8})
    )
    ffn = config["intermediate_size"]
    assert ffn % 256 == 0 and ffn - 256 < int(8 * width / 3) <= ffn


@pytest.mark.parametrize(
    ("model", "tied", "shared"),
    [("llama", "yes", True), ("llama", "", False), ("neox", "YES", True), ("gpt2", "no", False), ("gpt2", "", True)],
)
def test_a_tied_head_shares_the_token_embeddings_weights(model: str, tied: str, shared: bool) -> None:
    """``tied_embeddings`` (Llama 3.2 1B ties its LM head, Llama 3 8B does not): a tied head adds no
    parameters of its own; an empty cell keeps the family's default (GPT-2 tied, Llama and NeoX not)."""
    shape = {"id": "r", "model": model, "layers": 2, "d_model": 256, "heads": 4, "seq_len": 8, "vocab_size": 1000}
    with_cell = row_model(pd.Series({**shape, "tied_embeddings": tied})).params
    untied = row_model(pd.Series({**shape, "tied_embeddings": "no"})).params
    assert untied - with_cell == (1000 * 256 if shared else 0)


@pytest.mark.parametrize("model", ["gptj-6b", "GPTJ", "gpt_j", "GPT-J-6B"])
def test_every_spelling_of_gpt_j_is_gpt_j(model: str) -> None:
    row = {"id": "r", "model": model, "layers": 2, "d_model": 256, "heads": 4, "seq_len": 8}
    assert row_config(pd.Series(row))["model_type"] == "gptj"


def test_a_pipelined_run_is_predicted_on_its_own_wafer(tmp_path) -> None:
    path = _table(tmp_path, HEADER + ",execution_mode", "r1,gpt,2,256,4,128,8,1,CS-3,3.5,pipelined")
    (run,) = runs(read_measured(path))
    cal = Calibration(matmul_efficiency=0.5, attention_efficiency=0.25, layer_latency_s=1e-3, input_tokens_per_s=1e9)
    assert run.predict(cal) == pipelined(run.model.layers, "wse3", batch=8, calibration=cal).samples_per_s
    assert run.predict(cal) != pipelined(run.model.layers, "wse2", batch=8, calibration=cal).samples_per_s


# --- the fit ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Shape:
    """What grouped cross-validation reads of a run's model."""

    name: str = "power"
    family: str = "gpt2"
    seq_len: int = 8


@dataclasses.dataclass(frozen=True)
class PowerLawRun:
    """A run whose modelled throughput is ``scale * prod(figure ** exponent)``: log-linear in the fit."""

    id: str
    exponents: tuple[float, ...]
    scale: float
    measured_samples_per_s: float
    mode: str = "weight_streaming"
    release: str | None = None
    model: Shape = Shape()
    source: str = "a paper"
    systems: int = 1
    wafer: str = "wse2"

    def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
        return self.scale * math.prod(getattr(cal, n) ** e for n, e in zip(FIGURES, self.exponents, strict=True))


FIGURES = tuple(name for name in PARAMETERS if name != "pipelined_efficiency")
"""The figures weight-streaming runs that state no release inform: the fit fits these five."""
TRUE_LOG_FIGURES = np.log([0.5, 0.25, 1e-3, 1.5e6, 3e5])


def _power_law_runs(count: int, seed: int = 7) -> list[PowerLawRun]:
    generator = np.random.default_rng(seed)
    exponents = generator.uniform(-1.0, 1.0, size=(count, len(FIGURES)))
    noise = generator.normal(0.0, 0.05, size=count)
    return [
        PowerLawRun(f"run{i}", tuple(row), 3.0, float(3.0 * np.exp(row @ TRUE_LOG_FIGURES + noise[i])))
        for i, row in enumerate(exponents)
    ]


@pytest.mark.parametrize("count", [6, 7, 12])
def test_the_fit_and_its_standard_errors_are_those_of_least_squares_in_log_space(count: int) -> None:
    data = _power_law_runs(count)
    design = np.array([run.exponents for run in data])
    target = np.array([math.log(run.measured_samples_per_s / run.scale) for run in data])
    solution = np.linalg.lstsq(design, target, rcond=None)[0]
    assert solution[0] < 0 and solution[1] < 0  # the efficiencies' bounds are not active
    residuals = design @ solution - target
    variance = float(residuals @ residuals) / max(1, count - len(FIGURES))
    standard_errors = np.sqrt(np.diag(np.linalg.inv(design.T @ design)) * variance)
    result = fit(data)
    assert [getattr(result.calibration, n) for n in FIGURES] == pytest.approx(np.exp(solution), rel=1e-6)
    assert result.log_ratios == pytest.approx(residuals, abs=1e-7)
    assert [result.standard_errors[n] for n in FIGURES] == pytest.approx(standard_errors, rel=1e-4)


def test_a_figure_no_run_depends_on_has_no_standard_error() -> None:
    """micro_batch_tokens shapes no run here: it has no standard error; the four figures the runs
    depend on still have theirs."""
    data = [dataclasses.replace(run, exponents=(*run.exponents[:4], 0.0)) for run in _power_law_runs(8)]
    result = fit(data)
    assert math.isnan(result.standard_errors["micro_batch_tokens"])
    assert all(math.isfinite(result.standard_errors[name]) for name in FIGURES[:4])
    record = calibration_record(measured_csv(), result, _band_of(result), [result.calibration])
    assert record["parameters"]["micro_batch_tokens"]["relative_standard_error"] is None
    assert all(record["parameters"][name]["relative_standard_error"] is not None for name in FIGURES[:4])


def test_figures_the_runs_cannot_tell_apart_have_no_standard_error() -> None:
    """Two figures every run depends on alike (a Jacobian short of full rank, but no zero column): their
    variances are not determined, so the fit reports none rather than an error of 0 or of 1e8."""
    data = [dataclasses.replace(run, exponents=(*run.exponents[:4], run.exponents[2])) for run in _power_law_runs(8)]
    result = fit(data)
    assert all(math.isnan(value) for value in result.standard_errors.values())


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_a_figure_is_determined_unless_a_direction_is_a_millionth_of_the_strongest(scale: float) -> None:
    """The test is relative to the Jacobian's strongest direction, so it reads the same at any scale."""
    assert determined(scale * np.diag([1.0, 0.5, 0.25, 1.01e-6]))
    assert not determined(scale * np.diag([1.0, 0.5, 0.25, 0.99e-6]))
    assert not determined(scale * np.diag([1.0, 0.5, 0.25, 0.0]))
    assert not determined(np.zeros((6, 4)))


def test_runs_that_depend_on_no_figure_give_no_standard_errors() -> None:
    data = [dataclasses.replace(run, exponents=(0.0,) * len(FIGURES)) for run in _power_law_runs(8)]
    result = fit(data)
    assert all(math.isnan(value) for value in result.standard_errors.values())


def test_runs_the_model_cannot_predict_at_the_start_are_named() -> None:
    data = _power_law_runs(12)
    for index in (1, 3, 4, 6, 8, 9):
        data[index] = dataclasses.replace(data[index], measured_samples_per_s=math.nan)
    with pytest.raises(InvalidInputError) as refused:
        fit(data)
    assert str(refused.value) == "the model predicts no finite throughput for run(s) run1, run3, run4, run6, run8"


def test_the_finiteness_check_uses_the_start_figures() -> None:
    """A run whose prediction is infinite under the start figures (not under others) is refused."""

    @dataclasses.dataclass(frozen=True)
    class InfiniteAtSlowLayers(PowerLawRun):
        def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
            return math.inf if cal.layer_latency_s > 0.1 else super().predict(cal, placed_under)

    data = _power_law_runs(8)
    data[2] = InfiniteAtSlowLayers(**dataclasses.asdict(data[2]))
    slow = Calibration(
        matmul_efficiency=0.5,
        attention_efficiency=0.25,
        layer_latency_s=1.0,
        input_tokens_per_s=1e6,
        micro_batch_tokens=3e5,
    )
    with pytest.raises(InvalidInputError) as refused:
        fit(data, slow)
    assert str(refused.value).endswith(" run2")  # the only run named
    assert fit(data).calibration.layer_latency_s < 0.1


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("index", "prediction", "measured"), [(2, 0.0, None), (5, -1.0, None), (3, None, 0.0), (4, 1e300, 1e-100)]
)
def test_a_run_predicted_at_zero_or_below_or_measured_at_zero_is_named(index, prediction, measured) -> None:
    """log(predicted / measured) has no finite value for them (the last overflows): they are named, not a math
    domain error, and NumPy prints no warning."""

    @dataclasses.dataclass(frozen=True)
    class Fixed(PowerLawRun):
        def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
            return prediction if prediction is not None else super().predict(cal, placed_under)

    data: list[PowerLawRun] = _power_law_runs(8)
    changed = Fixed(**dataclasses.asdict(data[index]))
    data[index] = changed if measured is None else dataclasses.replace(changed, measured_samples_per_s=measured)
    with pytest.raises(InvalidInputError) as refused:
        fit(data)
    assert str(refused.value).endswith(f" run{index}")  # the wording is pinned by the test of several runs


@pytest.mark.filterwarnings("error")
def test_a_search_that_leaves_the_floating_point_range_is_refused_naming_the_measured_rates() -> None:
    """Rates of 1e-300 samples/s ask for figures no float holds: a prediction underflows to 0 on the way."""
    data = [
        dataclasses.replace(run, measured_samples_per_s=run.measured_samples_per_s * 1e-300)
        for run in _power_law_runs(8)
    ]
    with pytest.raises(InvalidInputError) as refused:
        fit(data)
    assert str(refused.value) == (
        "no calibration fits these runs: the search for one left the floating-point range (the model predicts no "
        "finite throughput for run(s) run3, run6); the measured rates span 4.62e-311 to 8.53e-296 samples/s"
    )


@pytest.mark.filterwarnings("error")
def test_a_search_that_drives_a_prediction_out_of_range_says_which(tmp_path) -> None:
    """The shipped runs measured at 1e-300 samples/s: the search drives a run's prediction to 0."""
    frame = read_measured(measured_csv())
    frame["samples_per_s"] = 1e-300
    with pytest.raises(InvalidInputError) as refused:
        fit(runs(frame))
    # the wording is pinned by the test above: here, the runs driven out of range (the first five) and the
    # rates measured
    driven = ["alcf-gptj-6b-2xcs2-1.7.1", "alcf-gptj-6b-2xcs2-1.8.0", "alcf-bert-large-2.0.3"]
    driven += ["alcf-gptj-6b-2xcs2-2.0.3", "alcf-ts-gptj-6b-1.9.2"]
    assert not names(str(refused.value), *driven, "1e-300 to 1e-300")
    others = [run_id for run_id in frame["id"] if run_id not in driven]
    assert names(str(refused.value), *others) == others  # no other run is named


@pytest.mark.filterwarnings("error")
def test_a_held_out_run_the_others_fit_predicts_at_zero_is_named(monkeypatch) -> None:
    @dataclasses.dataclass(frozen=True)
    class ZeroAtLowEfficiency(PowerLawRun):
        def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
            return 0.0 if cal.matmul_efficiency < 0.01 else super().predict(cal, placed_under)

    data: list[PowerLawRun] = _power_law_runs(7)
    data[4] = ZeroAtLowEfficiency(**{**dataclasses.asdict(data[4]), "model": Shape(family="bert")})
    low = Calibration(
        matmul_efficiency=0.001,
        attention_efficiency=0.25,
        layer_latency_s=1e-3,
        input_tokens_per_s=1e6,
        micro_batch_tokens=3e5,
    )
    monkeypatch.setattr(band_module, "fit", lambda rows, start: calibrate.Fit(low, np.zeros(len(rows)), {}))
    with pytest.raises(InvalidInputError) as refused:
        grouped_cross_validation(data)
    assert str(refused.value) == "run run4: the fit without its family predicts no finite throughput"


def _grouped_runs(count: int, releases: int = 25) -> list[PowerLawRun]:
    """``count`` runs of three families, two sources, ``releases`` releases and as many configurations as runs."""
    return [
        dataclasses.replace(
            run,
            model=Shape(name=f"model{i}", family=("gpt2", "bert", "llama")[i % 3]),
            source=("a paper", "a training log")[i % 2],
            release=f"2.{i % releases}.0",
        )
        for i, run in enumerate(_power_law_runs(count))
    ]


def test_grouped_cross_validation_costs_one_fit_per_group_and_never_fits_a_held_out_group(monkeypatch) -> None:
    """300 runs: 3 families, 2 sources, 25 releases (in 10 folds), 300 configurations (in 10 folds) cost
    25 fits, not 300; each held-out prediction comes from a fit that saw no run of its group."""
    data = _grouped_runs(300)
    fitted_ids: list[set[str]] = []
    real_fit = band_module.fit

    def spy(rows, start):
        fitted_ids.append({run.id for run in rows})
        return real_fit(rows, start)

    monkeypatch.setattr(band_module, "fit", spy)
    validation = grouped_cross_validation(data)
    assert len(fitted_ids) == 3 + 2 + MAX_FOLDS + MAX_FOLDS == len(validation.fits)
    by_id = {run.id: run for run in data}
    seen_by_fold = dict(zip(validation.fits, fitted_ids, strict=True))
    assert len(validation.held_out) == len(band_module.GROUPINGS) * len(data)
    for held in validation.held_out:
        seen = seen_by_fold[(held.grouping, held.fold)]
        group_of = band_module.GROUPINGS[held.grouping]
        assert held.group == group_of(by_id[held.run_id])
        assert not any(group_of(by_id[run_id]) == held.group for run_id in seen)
        run = by_id[held.run_id]
        predicted = run.predict(validation.fits[(held.grouping, held.fold)])
        assert held.log_ratio == pytest.approx(math.log(predicted / run.measured_samples_per_s))
        assert (held.mode, held.family_class) == (run.mode, family_class(run.model.family))
    assert {h.family_class for h in validation.held_out} == {"decoder", "encoder"}
    assert {h.fold for h in validation.held_out if h.grouping == "release"} == {
        f"fold {i} of {MAX_FOLDS}" for i in range(1, MAX_FOLDS + 1)
    }


def test_a_table_no_group_of_which_can_be_left_out_is_refused() -> None:
    """Seven runs of one family, source, release and configuration: every fold leaves nothing to fit; no
    runs at all: nothing to leave out."""
    with pytest.raises(InvalidInputError, match="no group of these runs can be left out of a fit"):
        grouped_cross_validation([dataclasses.replace(run, model=Shape()) for run in _power_law_runs(7)])
    with pytest.raises(InvalidInputError, match=r"has too few runs \(no runs\)$"):
        grouped_cross_validation([])


def test_a_held_out_run_predicted_infinitely_fast_is_named(monkeypatch) -> None:
    @dataclasses.dataclass(frozen=True)
    class Unbounded(PowerLawRun):
        def predict(self, cal: Calibration, placed_under: Calibration | None = None) -> float:
            return math.inf if cal.matmul_efficiency < 0.01 else super().predict(cal, placed_under)

    data: list[PowerLawRun] = _power_law_runs(7)
    data[4] = Unbounded(**{**dataclasses.asdict(data[4]), "model": Shape(family="bert")})
    low = Calibration(matmul_efficiency=0.001, attention_efficiency=0.25, layer_latency_s=1e-3, input_tokens_per_s=1e6)
    monkeypatch.setattr(band_module, "fit", lambda rows, start: calibrate.Fit(low, np.zeros(len(rows)), {}))
    with pytest.raises(InvalidInputError, match="run run4: the fit without its family predicts no finite throughput"):
        grouped_cross_validation(data)


def _band_of(result: calibrate.Fit) -> dict:
    """A band from held-out ratios equal to the fit's own (what a record needs, without refitting)."""
    held = tuple(
        HeldOut(f"run{i}", "family", "gpt2", "gpt2", "weight_streaming", "decoder", float(r))
        for i, r in enumerate(result.log_ratios)
    )
    return bands(GroupedValidation(held, {}, {}), [])


@pytest.fixture
def starts(monkeypatch) -> list[np.ndarray]:
    """Where each least-squares search starts (log figures), recorded around scipy's solver."""
    recorded: list[np.ndarray] = []
    solver = calibrate.least_squares

    def recording(function, x0, **options):
        recorded.append(np.array(x0, dtype=float))
        return solver(function, x0, **options)

    monkeypatch.setattr(calibrate, "least_squares", recording)
    return recorded


def test_the_fit_starts_from_the_figures_it_is_given(starts) -> None:
    start = Calibration(
        matmul_efficiency=0.7,
        attention_efficiency=0.9,
        layer_latency_s=2e-3,
        input_tokens_per_s=3e5,
        micro_batch_tokens=4e5,
    )
    fit(_power_law_runs(7), start)
    assert starts[0] == pytest.approx(np.log([0.7, 0.9, 2e-3, 3e5, 4e5]), rel=1e-12)
    on_the_bound = dataclasses.replace(start, matmul_efficiency=1.0, attention_efficiency=1.0)
    fit(_power_law_runs(7), on_the_bound)
    assert -1e-8 < starts[1][0] < 0 and -1e-8 < starts[1][1] < 0  # just inside efficiency <= 1
    assert starts[1][2:] == pytest.approx(np.log([2e-3, 3e5, 4e5]), rel=1e-12)


def test_each_grouped_fit_starts_from_the_given_figures(starts) -> None:
    start = Calibration(
        matmul_efficiency=0.7,
        attention_efficiency=0.9,
        layer_latency_s=2e-3,
        input_tokens_per_s=3e5,
        micro_batch_tokens=4e5,
    )
    validation = grouped_cross_validation(_grouped_runs(30, releases=3), start)
    assert len(starts) == len(validation.fits) > 0
    for x0 in starts:  # the system figures from ``start``; each release's figure from 1 (no difference)
        assert x0[:5] == pytest.approx(np.log([0.7, 0.9, 2e-3, 3e5, 4e5]), rel=1e-12)
        assert (x0[5:] == 0).all()


# --- the record -------------------------------------------------------------------------------------


def test_the_record_of_the_shipped_set_names_it_as_the_shipped_calibration_does() -> None:
    shipped = json.loads((Path(calibrate.__file__).parent / "calibration.json").read_text(encoding="utf-8"))
    result = fit(_power_law_runs(7))
    band = _band_of(result)
    judged = judged_evidence([], {}, band)
    record = calibration_record(measured_csv(), result, band, [result.calibration], judged=judged)
    assert record["data"]["file"] == shipped["data"]["file"] == "csconform/perf/measured/calibration.csv"
    assert record["data"]["source"] == shipped["data"]["source"] == SHIPPED_SOURCE
    assert record["data"]["sha256"] == shipped["data"]["sha256"]
    assert record["method"] == shipped["method"]
    assert list(record) == list(shipped)


def test_the_record_of_a_users_table_names_its_file_and_source(tmp_path) -> None:
    path = _table(tmp_path, HEADER, GOOD)
    result = fit(_power_law_runs(7))
    record = calibration_record(path, result, _band_of(result), [result.calibration], datetime.date(2026, 5, 6))
    assert record["data"]["file"] == str(path)
    assert record["data"]["source"] == "measured runs supplied by the user"
    missing = tmp_path / "gone.csv"
    with pytest.raises(InputFileError) as refused:
        calibration_record(missing, result, _band_of(result), [result.calibration])
    assert str(refused.value).startswith(f"{missing}: ")


def test_a_fit_does_not_depend_on_what_was_predicted_before() -> None:
    """The search re-times pipelined runs on their placement at its beginning; a run that was placed
    before under another calibration (a held-out prediction, a plan) must not change the fit. It did:
    the grouped cross-validation gave 1.448 leaving a source out when run first and 1.391 after a fit."""
    fresh = calibrate.fitted_runs(runs(read_measured(measured_csv())))
    used = calibrate.fitted_runs(runs(read_measured(measured_csv())))
    elsewhere = dataclasses.replace(calibrate.START, matmul_efficiency=0.9, pipelined_efficiency=0.3)
    pipelined_runs = [run for run in used if run.mode == "pipelined"]
    assert pipelined_runs
    for run in pipelined_runs:
        run.predict(elsewhere)
        run.predict(calibrate.START, placed_under=elsewhere)
    assert fit(used).calibration == fit(fresh).calibration


def test_each_run_keeps_the_source_its_row_names() -> None:
    """The grouped cross-validation leaves a source out by the run's ``source`` (band._source): a run
    that lost it would fall into one "not stated" group with every other."""
    frame = read_measured(measured_csv())
    read = runs(frame)
    assert [run.source for run in read] == [str(source) for source in frame["source"]]
    assert len({run.source for run in read}) > 1


def test_an_empty_text_cell_of_a_frame_pandas_read_states_nothing() -> None:
    """pandas reads an empty cell as NaN: such a row states no release or source and is a fitted run, as
    the same row with empty text is (not a release, source or use called 'nan')."""
    row = read_measured(measured_csv()).iloc[[0]]
    [empty] = runs(row.assign(release="", source="", use=""))
    [missing] = runs(row.assign(release=math.nan, source=math.nan, use=math.nan))
    assert (missing.release, missing.source, missing.use) == (None, "", "fit")
    assert (missing.release, missing.source, missing.use) == (empty.release, empty.source, empty.use)
