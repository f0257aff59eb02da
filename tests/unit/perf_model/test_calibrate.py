"""Unit tests of the calibration: measured rows to models, the fit, the figures' checks, the CLI."""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from csconform.cli import main as cli_main
from csconform.errors import InvalidInputError
from csconform.perf.calibration.fit import error, fit, fitted_runs, worst
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, row_config, row_model, runs
from csconform.perf.execution.efficiency import Calibration, fitted

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


@pytest.mark.parametrize(
    ("model", "family"),
    [("bert_base", "bert"), ("Llama-2-7B", "llama"), ("pythia_1b", "gpt_neox"), ("GPT-J", "gptj"), ("gpt3_xl", "gpt2")],
)
def test_the_family_comes_from_the_name(model, family):
    config = row_config(pd.Series({**ROW, "model": model}))
    assert config["model_type"] == family
    assert row_model(pd.Series({**ROW, "model": model})).family == family


def test_family_defaults_and_optional_columns():
    llama = row_config(pd.Series({**ROW, "model": "llama"}))
    assert llama["intermediate_size"] == 11008 and llama["num_key_value_heads"] == 32  # Llama-2 7B's
    given = row_config(pd.Series({**ROW, "model": "llama", "ffn": 28672, "kv_heads": 8, "vocab_size": 128256}))
    assert (given["intermediate_size"], given["num_key_value_heads"], given["vocab_size"]) == (28672, 8, 128256)
    bert = row_config(pd.Series({**ROW, "model": "bert_large"}))
    assert bert["architectures"] == ["BertForSequenceClassification"]  # the measured BERT runs fine-tune
    with pytest.raises(InvalidInputError, match="family"):
        row_config(pd.Series({**ROW, "model": "mamba"}))
    zoo = row_model(pd.Series({**ROW, "model": "whatever", "config": "gpt3_xl", "seq_len": 512}))
    assert zoo.name == "gpt3_xl" and zoo.seq_len == 512


def test_measured_tables_are_checked(tmp_path):
    path = tmp_path / "runs.csv"
    pd.DataFrame([{**ROW, "model": "gpt"}]).drop(columns=["heads"]).to_csv(path, index=False)
    with pytest.raises(InvalidInputError, match="heads"):
        read_measured(path)
    for bad, message in (({"global_batch": 9, "systems": 2}, "split"), ({"system": "TPU"}, "unknown wafer")):
        pd.DataFrame([{**ROW, "model": "gpt", **bad}]).to_csv(path, index=False)
        with pytest.raises(InvalidInputError, match=message):
            runs(read_measured(path))
    pd.DataFrame([{**ROW, "model": "gpt", "system": "CS-3", "execution_mode": "pipelined"}]).to_csv(path, index=False)
    (run,) = runs(read_measured(path))
    assert run.wafer == "wse3" and run.mode == "pipelined"


def test_the_fit_recovers_known_figures_from_synthetic_measurements():
    data = fitted_runs(runs(read_measured(measured_csv())))
    # figures chosen so that each one shapes some run (the input rate caps BERT-Base at large batches, the
    # lanes the larger batches); one figure per release generation of two or more fitted runs (2.0 only)
    truth = Calibration(
        matmul_efficiency=0.5,
        attention_efficiency=0.25,
        layer_latency_s=1e-3,
        input_tokens_per_s=1.5e6,
        micro_batch_tokens=3e5,
        pipelined_efficiency=0.7,
        release_efficiency={"2.0": 0.8},
    )
    synthetic = [dataclasses.replace(run, measured_samples_per_s=run.predict(truth)) for run in data]
    result = fit(synthetic)
    assert result.calibration.as_dict() == pytest.approx(truth.as_dict(), rel=1e-3)
    assert error(result.log_ratios) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(InvalidInputError, match="more than 5"):
        fit(synthetic[:5])


def test_error_measures():
    logs = [math.log(1.1), math.log(1 / 1.3)]
    assert error(logs) == pytest.approx(math.exp((math.log(1.1) + math.log(1.3)) / 2))
    assert worst(logs) == pytest.approx(1.3)


def test_figures_must_be_physical():
    for bad in (
        {"matmul_efficiency": 1.5},
        {"attention_efficiency": 0},
        {"layer_latency_s": -1},
        {"input_tokens_per_s": 0},
    ):
        with pytest.raises(InvalidInputError):
            fitted().with_values(**bad)


def test_cli_scores_other_measured_runs(tmp_path, capsys):
    path, out = tmp_path / "runs.csv", tmp_path / "scored.csv"
    frame = read_measured(measured_csv()).iloc[[0, 6, 13]]
    frame.to_csv(path, index=False)
    assert cli_main(["calibrate", "--evaluate", str(path), "--csv", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "3 runs: error" in printed
    scored = pd.read_csv(out)
    assert list(scored["id"]) == list(frame["id"])
    assert (scored["ratio"].between(1 / 1.5, 1.5)).all()
    assert cli_main(["calibrate", "--evaluate", str(tmp_path / "missing.csv")]) == 2


def test_a_fit_prints_what_the_runs_kept_to_judge_say_per_wafer(tmp_path, capsys):
    """The fit's judged-runs line (one template): per wafer, the judged and fitted runs, the median ratio,
    the worst and how many lie inside their band; the same figures the record keeps."""
    lines = measured_csv().read_text(encoding="utf-8").splitlines()
    kept = [lines[0]] + [
        line for line in lines[1:] if line.startswith(("usc-gpt3-", "alcf-gptj-", "alcf-llama", "dabench-gptj"))
    ]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    record_path = tmp_path / "fit.json"
    assert cli_main(["calibrate", "--measured", str(path), "--write", str(record_path)]) == 0
    record = json.loads(record_path.read_text(encoding="utf-8"))
    entry = record["judged"]["wafers"]["wse2"]
    assert entry["judged_runs"] == 1 and record["band"]["fitted_runs_by_wafer"] == {"wse1": 0, "wse2": 16, "wse3": 1}
    assert (
        f"  runs kept to judge on wse2: 1 (fitted: 16), median predicted / measured {entry['median_ratio']:.3g}, "
        f"worst x{entry['worst']:.3g}, {entry['inside_band']} inside their band"
    ) in capsys.readouterr().out.splitlines()
