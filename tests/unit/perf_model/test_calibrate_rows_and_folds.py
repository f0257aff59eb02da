"""The calibration as a judge of the performance model: each measured row's model, the fit, and the
grouped cross-validation that the published error and band are computed from (csconform/perf/calibration/).

Expectations are written by hand from the module's documentation; the data are the shipped calibration
set, or measurements synthesized from known figures so that the right answer is known exactly.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from csconform.errors import InvalidInputError
from csconform.perf.calibration.band import bands, grouped_cross_validation
from csconform.perf.calibration.fit import MEANINGS, UNITS, calibration_record, error, fit, worst
from csconform.perf.calibration.measured_runs import (
    Run,
    measured_csv,
    read_measured,
    row_config,
    row_mode,
    row_model,
    runs,
)
from csconform.perf.execution.efficiency import PARAMETERS, Calibration, release_figure
from csconform.perf.execution.pipelined import pipelined
from csconform.perf.execution.streaming import weight_streaming
from csconform.perf.models.zoo import get_model

ROW = {
    "id": "r",
    "layers": 2,
    "d_model": 4096,
    "heads": 32,
    "seq_len": 128,
    "global_batch": 8,
    "systems": 1,
    "system": "CS-2",
    "samples_per_s": 1.0,
}
TRUTH = Calibration(
    matmul_efficiency=0.5,
    attention_efficiency=0.25,
    layer_latency_s=1e-3,
    input_tokens_per_s=1.5e6,
    micro_batch_tokens=3e5,
)
FIGURES = tuple(name for name in PARAMETERS if name != "pipelined_efficiency")
"""What weight-streaming runs that state no release inform: the figures their fit fits."""
# twelve runs of the calibration set that between them depend on all five figures
SUBSET = (0, 3, 6, 9, 12, 14, 16, 18, 20, 22, 24, 25)


def _row(**values: object) -> pd.Series:
    return pd.Series({**ROW, **values})


def _synthetic(indices: tuple[int, ...] = SUBSET) -> list[Run]:
    data = runs(read_measured(measured_csv()))
    return [dataclasses.replace(data[i], measured_samples_per_s=data[i].predict(TRUTH)) for i in indices]


# --- a measured row's model ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "seq_len", "expected"),
    [
        (
            "BERT-base",
            128,
            {
                "model_type": "bert",
                "architectures": ["BertForSequenceClassification"],
                "num_hidden_layers": 2,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "intermediate_size": 16384,
                "vocab_size": 30522,
                "max_position_embeddings": 512,
            },
        ),
        (
            "Llama-2",
            128,
            {
                "model_type": "llama",
                "num_hidden_layers": 2,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "num_key_value_heads": 32,
                "intermediate_size": 11008,
                "vocab_size": 32000,
                "max_position_embeddings": 4096,
                "tie_word_embeddings": False,
            },
        ),
        (
            "Pythia-1b",
            128,
            {
                "model_type": "gpt_neox",
                "num_hidden_layers": 2,
                "hidden_size": 4096,
                "num_attention_heads": 32,
                "intermediate_size": 16384,
                "vocab_size": 50432,
                "max_position_embeddings": 2048,
                "tie_word_embeddings": False,
            },
        ),
        (
            "GPT-J-6B",
            128,
            {
                "model_type": "gptj",
                "n_layer": 2,
                "n_embd": 4096,
                "n_head": 32,
                "n_inner": None,
                "vocab_size": 50400,
                "n_positions": 2048,
                "tie_word_embeddings": False,
            },
        ),
        (
            "gpt3_xl",
            128,
            {
                "model_type": "gpt2",
                "n_layer": 2,
                "n_embd": 4096,
                "n_head": 32,
                "n_inner": None,
                "vocab_size": 50257,
                "n_positions": 2048,
                "tie_word_embeddings": True,
            },
        ),
    ],
)
def test_each_family_gets_its_defaults(model: str, seq_len: int, expected: dict) -> None:
    assert row_config(_row(model=model, seq_len=seq_len)) == expected


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ("bert", "max_position_embeddings"),
        ("llama", "max_position_embeddings"),
        ("neox", "max_position_embeddings"),
        ("gptj", "n_positions"),
        ("gpt", "n_positions"),
    ],
)
def test_a_long_sequence_gets_as_many_positions(model: str, field: str) -> None:
    assert row_config(_row(model=model, seq_len=8192))[field] == 8192


def test_the_optional_columns_replace_the_defaults() -> None:
    given = {"ffn": 1000, "vocab_size": 777, "kv_heads": 8}
    assert row_config(_row(model="bert", **given))["intermediate_size"] == 1000
    assert row_config(_row(model="bert", **given))["vocab_size"] == 777
    llama = row_config(_row(model="llama", **given))
    assert (llama["intermediate_size"], llama["vocab_size"], llama["num_key_value_heads"]) == (1000, 777, 8)
    neox = row_config(_row(model="neox", **given))
    assert (neox["intermediate_size"], neox["vocab_size"]) == (1000, 777)
    for name in ("gptj", "gpt"):
        config = row_config(_row(model=name, **given))
        assert (config["n_inner"], config["vocab_size"]) == (1000, 777)
    # empty cells (NaN in a CSV, an empty string) are "not given"
    for empty in (float("nan"), "", None):
        assert row_config(_row(model="llama", ffn=empty, kv_heads=empty))["num_key_value_heads"] == 32
    assert row_config(_row(model="llama", kv_heads=4.0))["num_key_value_heads"] == 4


def test_a_row_whose_family_cannot_be_told_is_refused_by_id() -> None:
    with pytest.raises(InvalidInputError) as refused:
        row_config(_row(model="Mamba-2.8B", id="row-17"))
    assert str(refused.value) == (
        "row row-17: cannot tell the family of model 'Mamba-2.8B' (bert, llama, neox, gptj or gpt); "
        "give a config column"
    )


def test_the_config_column_names_a_zoo_model_or_a_file(tmp_path) -> None:
    zoo = row_model(_row(model="anything", config="gpt3_xl", seq_len=512))
    assert zoo.name == "gpt3_xl" and zoo.seq_len == 512 and zoo.params == get_model("gpt3_xl", seq_len=512).params
    path = tmp_path / "tiny.json"
    path.write_text(
        json.dumps(
            {"model_type": "gpt2", "n_layer": 1, "n_embd": 64, "n_head": 2, "vocab_size": 100, "n_positions": 64}
        )
    )
    from_file = row_model(_row(model="anything", config=str(path), seq_len=32))
    assert from_file.name == "tiny" and from_file.seq_len == 32 and from_file.family == "gpt2"
    for blank in (" ", float("nan")):
        shaped = row_model(_row(model="gpt_small_row", config=blank, seq_len=64))
        assert shaped.name == "gpt_small_row" and shaped.seq_len == 64


@pytest.mark.parametrize(
    ("stated", "mode"),
    [
        ("pipelined", "pipelined"),
        ("Pipelined", "pipelined"),
        (" pipelined ", "pipelined"),
        ("weight streaming", "weight_streaming"),
        ("weight-streaming", "weight_streaming"),
        ("not stated", "weight_streaming"),
        ("", "weight_streaming"),
        (None, "weight_streaming"),
    ],
)
def test_the_mode_is_weight_streaming_unless_the_row_says_pipelined(stated: object, mode: str) -> None:
    assert row_mode(_row(execution_mode=stated)) == mode
    assert row_mode(pd.Series(ROW)) == "weight_streaming"


def test_a_measured_table_becomes_runs(tmp_path) -> None:
    path = tmp_path / "runs.csv"
    rows = [
        {**ROW, "id": 7, "model": "gpt", "system": "CS-3", "systems": 4, "global_batch": 64, "samples_per_s": 12},
        {**ROW, "id": "b", "model": "bert", "execution_mode": "pipelined", "samples_per_s": 3.5},
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    first, second = runs(read_measured(path))
    assert (first.id, first.wafer, first.systems, first.global_batch, first.mode) == (
        "7",
        "wse3",
        4,
        64,
        "weight_streaming",
    )
    assert first.measured_samples_per_s == 12.0 and isinstance(first.measured_samples_per_s, float)
    assert (second.id, second.wafer, second.mode, second.measured_samples_per_s) == ("b", "wse2", "pipelined", 3.5)
    # a weight-streaming run predicts as its systems, each with its share of the global batch
    assert first.predict(TRUTH) == weight_streaming(first.model.layers, "wse3", 4, 16, TRUTH).samples_per_s
    expected = pipelined(second.model.layers, "wse2", batch=8, calibration=TRUTH).samples_per_s
    assert second.predict(TRUTH) == expected
    pd.DataFrame([{**ROW, "id": "odd", "model": "gpt", "systems": 3, "global_batch": 8}]).to_csv(path, index=False)
    with pytest.raises(InvalidInputError) as refused:
        runs(read_measured(path))
    assert str(refused.value) == "row odd: global batch 8 does not split over 3 systems"
    pd.DataFrame(columns=list(ROW) + ["model"]).to_csv(path, index=False)
    with pytest.raises(InvalidInputError, match="no measured runs"):
        read_measured(path)


# --- the measures ----------------------------------------------------------------------------------


def test_error_is_the_geometric_mean_of_the_ratio_either_way_and_worst_its_largest() -> None:
    logs = np.log([1.1, 1 / 1.3, 1.0, 2.0])
    assert error(logs) == pytest.approx((1.1 * 1.3 * 1.0 * 2.0) ** 0.25)
    assert worst(logs) == pytest.approx(2.0)
    assert worst(np.log([1 / 3, 2.0])) == pytest.approx(3.0)
    assert error([0.0]) == worst([0.0]) == 1.0


# --- the fit ----------------------------------------------------------------------------------------


def test_the_fit_reports_log_predicted_over_measured_per_run() -> None:
    data = _synthetic()
    doubled = [dataclasses.replace(r, measured_samples_per_s=2 * r.measured_samples_per_s) for r in data]
    result = fit(doubled)  # every run measured twice as fast: no figure set within bounds explains it all
    for run, log_ratio in zip(doubled, result.log_ratios, strict=True):
        assert log_ratio == pytest.approx(math.log(run.predict(result.calibration) / run.measured_samples_per_s))
    assert result.calibration.matmul_efficiency <= 1.0 and result.calibration.attention_efficiency <= 1.0
    assert set(result.standard_errors) == set(FIGURES)
    # the residuals are not zero; the lanes grow past every shard here, so no run depends on them any more
    assert math.isnan(result.standard_errors["micro_batch_tokens"])
    assert all(result.standard_errors[name] > 0 for name in FIGURES if name != "micro_batch_tokens")


def test_the_fit_may_start_on_the_bounds() -> None:
    """Efficiencies of exactly 1 are a valid start: the fit moves it just inside its bounds."""
    on_the_bound = Calibration(
        matmul_efficiency=1.0,
        attention_efficiency=1.0,
        layer_latency_s=1e-3,
        input_tokens_per_s=1.5e6,
        micro_batch_tokens=3e5,
    )
    result = fit(_synthetic(), on_the_bound)
    assert result.calibration.matmul_efficiency <= 1.0 and result.calibration.attention_efficiency <= 1.0
    assert error(result.log_ratios) < 1.5


def test_the_fit_needs_more_runs_than_figures() -> None:
    data = _synthetic()
    with pytest.raises(InvalidInputError) as refused:
        fit(data[:5])
    assert str(refused.value) == "need more than 5 measured runs to fit 5 figures"
    assert fit(data[:6]).log_ratios.shape == (6,)


# --- grouped cross-validation ---------------------------------------------------------------------


def test_each_run_is_predicted_by_the_fit_that_left_out_its_group() -> None:
    """The run of one configuration (BERT-Large) measured twice as fast as the known figures give: the
    fit without that configuration recovers the figures, so its held-out prediction is off by exactly 2;
    the fits that saw it are pulled off. Leaving out BERT-Base (7 of the 12 runs) leaves too few runs
    for a fit: that fold is named with the reason, and its runs get no prediction from it."""
    data = _synthetic()
    odd = {run.id for run in data if run.model.name == "bert_large"}
    data = [
        dataclasses.replace(r, measured_samples_per_s=2 * r.measured_samples_per_s) if r.id in odd else r for r in data
    ]
    seen: list[tuple[int, int]] = []
    validation = grouped_cross_validation(data, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i, len(seen)) for i in range(1, len(seen) + 1)]
    assert len(seen) == len(validation.fits) + len(validation.unfitted)
    by_configuration = {h.run_id: h.log_ratio for h in validation.held_out if h.grouping == "configuration"}
    assert set(by_configuration) == {run.id for run in data if run.model.name != "bert_base"}
    (reason,) = [r for (g, label), r in validation.unfitted.items() if g == "configuration"]
    left = [run for run in data if run.model.name != "bert_base"]
    with pytest.raises(InvalidInputError) as too_few:  # worded in test_the_fit_needs_more_runs_than_figures
        fit(left)
    assert reason == str(too_few.value)  # the fold is named with the fit's own refusal
    for run_id in odd:
        assert by_configuration[run_id] == pytest.approx(math.log(0.5), abs=1e-5)
    others = [ratio for run_id, ratio in by_configuration.items() if run_id not in odd]
    assert max(abs(ratio) for ratio in others) > 0.05


def test_the_calibration_record_holds_the_fit_and_its_cross_validation(tmp_path) -> None:
    path = tmp_path / "measured.csv"
    path.write_bytes(b"the data")
    data = _synthetic()
    data[0] = dataclasses.replace(data[0], measured_samples_per_s=1.3 * data[0].measured_samples_per_s)
    full = fit(data)
    validation = grouped_cross_validation(data)
    band = bands(validation, data)
    held_out_fits = list(validation.fits.values())
    record = calibration_record(path, full, band, held_out_fits, today=datetime.date(2026, 1, 2))
    assert record["fitted_on"] == "2026-01-02"
    assert record["data"]["sha256"] == hashlib.sha256(b"the data").hexdigest()
    assert record["data"]["rows"] == len(data) and record["data"]["file"] == str(path)  # not the shipped set
    assert set(record["parameters"]) == set(PARAMETERS)
    for name, entry in record["parameters"].items():
        values = [getattr(c, name) for c in held_out_fits]
        assert entry["value"] == float(f"{getattr(full.calibration, name):.4g}")
        assert entry["unit"] == UNITS[name] and entry["meaning"] == MEANINGS[name]
        if name in FIGURES:
            assert entry["fitted"] and entry["relative_standard_error"] == float(f"{full.standard_errors[name]:.3g}")
        else:  # no pipelined run: pipelined_efficiency keeps its neutral 1
            assert not entry["fitted"] and entry["value"] == 1.0 and entry["relative_standard_error"] is None
        assert entry["cross_validation_range"] == [float(f"{min(values):.4g}"), float(f"{max(values):.4g}")]
    assert record["fit"] == {
        "error": float(f"{error(full.log_ratios):.4f}"),
        "worst_row": float(f"{worst(full.log_ratios):.4f}"),
        "held_out_error": band["error"],
        "held_out_worst_row": band["worst"],
        "error_measure": "exp(mean |log(predicted / measured)|)",
    }
    assert record["band"] == band
    by_wafer = {name: sum(1 for run in data if run.wafer == name) for name in ("wse1", "wse2", "wse3")}
    assert band["fitted_runs_by_wafer"] == by_wafer and sum(by_wafer.values()) == len(data)
    assert record["fit"]["held_out_error"] > record["fit"]["error"] > 1.0
    today = calibration_record(path, full, band, held_out_fits)["fitted_on"]
    assert today == datetime.date.today().isoformat()
    assert record["release_generations"] == {}  # no synthetic run states a release
    # a fit whose runs state releases: each generation's runs, and whether the fit gave it a figure of its own
    with_releases = dataclasses.replace(
        full, figures=(*full.figures, release_figure("2.0")), release_runs={"2.0": 2, "1.8": 1}
    )
    generations = calibration_record(path, with_releases, band, held_out_fits)["release_generations"]
    assert generations["2.0"] == {"weight_streaming_runs": 2, "figure": "fitted"}
    assert generations["1.8"]["weight_streaming_runs"] == 1
    assert generations["1.8"]["figure"].startswith("not determined")
