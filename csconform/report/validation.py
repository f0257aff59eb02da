"""The tables of the performance model against measured runs (``performance_validation.md``).

Every run of the calibration set is predicted twice: by the stored fit (all runs) and by a fit
that left that run out (leave-one-out cross-validation). The tables also show why the runs are
planned in weight streaming, how predictions scale with the number of systems and the wafer
generation, and how they compare with public statements; :func:`fit_summary`, :func:`batch_rise`
and :func:`data_figures` are the numbers the page's prose quotes. Pure functions from
:mod:`csconform.perf` and the measured runs to frames and numbers, nothing here is a hard-coded
result; :mod:`csconform.report.validation_page` writes them, with the page's prose and figures.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from csconform.perf import hardware
from csconform.perf.calibration.fit import error, leave_one_out, worst
from csconform.perf.calibration.measured_runs import Run
from csconform.perf.execution.efficiency import IDEAL, PARAMETERS, calibration_record, fitted
from csconform.perf.execution.pipelined import fits_pipelined, pipelined
from csconform.perf.execution.streaming import weight_streaming
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.zoo import get_model

SCALING_MODELS = {  # model -> (batch per system for weak scaling, global batch for strong scaling)
    "bert_large": (1024, 8192),
    "gpt3_xl": (64, 1024),
    "gpt3_13b": (64, 1024),
    "llama2_70b": (32, 2048),
}
SYSTEMS = {"wse2": (1, 2, 4, 8, 16, 32, 64, 128, 192), "wse3": (1, 2, 4, 16, 64, 256, 1024, 2048)}
CEREBRAS_GPT = {  # Cerebras-GPT (Dey et al. 2023, Table 1): layers, d_model, heads, parameters; 20 tokens/parameter
    "111M": (10, 768, 12, 111e6),
    "256M": (14, 1088, 17, 256e6),
    "590M": (18, 1536, 12, 590e6),
    "1.3B": (24, 2048, 16, 1.3e9),
    "2.7B": (32, 2560, 32, 2.7e9),
    "6.7B": (32, 4096, 32, 6.7e9),
    "13B": (40, 5120, 40, 13e9),
}


def validation_table(data: list[Run], cross_validate: bool = True) -> pd.DataFrame:
    """Predicted against measured samples/s for every run: stored fit and, optionally, leave-one-out."""
    cal = fitted()
    loo = leave_one_out(data, cal)[0] if cross_validate else None
    rows = []
    for index, run in enumerate(data):
        predicted = run.predict(cal)
        row: dict[str, Any] = {
            "id": run.id,
            "model": run.model.name,
            "params": run.model.params,
            "seq_len": run.model.seq_len,
            "global_batch": run.global_batch,
            "systems": run.systems,
            "wafer": run.wafer,
            "mode": run.mode,
            "measured_samples_per_s": run.measured_samples_per_s,
            "predicted_samples_per_s": predicted,
            "ratio": predicted / run.measured_samples_per_s,
        }
        if loo is not None:
            row["loo_predicted_samples_per_s"] = run.measured_samples_per_s * math.exp(loo[index])
            row["loo_ratio"] = math.exp(loo[index])
        row["peak_model_ratio"] = run.predict(IDEAL) / run.measured_samples_per_s
        rows.append(row)
    return pd.DataFrame(rows)


def parameter_table() -> pd.DataFrame:
    record = calibration_record()["parameters"]
    return pd.DataFrame(
        [
            {
                "figure": name,
                "value": record[name]["value"],
                "unit": record[name]["unit"],
                "relative_standard_error": record[name]["relative_standard_error"],
                "leave_one_out_min": record[name]["leave_one_out_range"][0],
                "leave_one_out_max": record[name]["leave_one_out_range"][1],
                "meaning": record[name]["meaning"],
            }
            for name in PARAMETERS
        ]
    )


def mode_table(data: list[Run]) -> pd.DataFrame:
    """The BERT batch sweep three ways: measured, weight streaming and a resident pipeline (one placement
    per model; each batch then fills and drains it)."""
    cal = fitted()
    placed: dict[str, Any] = {}
    rows = []
    for run in data:
        if run.model.family != "bert":
            continue
        if run.model.name not in placed:
            placed[run.model.name] = pipelined(run.model.layers, run.wafer, batch=run.global_batch, calibration=cal)
        piped = dataclasses.replace(placed[run.model.name], batch=run.global_batch).samples_per_s
        rows.append(
            {
                "model": run.model.name,
                "global_batch": run.global_batch,
                "measured_samples_per_s": run.measured_samples_per_s,
                "weight_streaming_samples_per_s": run.predict(cal),
                "pipelined_samples_per_s": piped,
                "fits_pipelined": fits_pipelined(run.model.layers, run.wafer),
            }
        )
    return pd.DataFrame(rows).sort_values(["model", "global_batch"]).reset_index(drop=True)


def scaling_table() -> pd.DataFrame:
    """Samples/s against systems on each wafer generation: weak (fixed batch per system) and strong
    (fixed global batch) scaling, with the efficiency relative to N x one system."""
    rows = []
    for name, (per_system, global_batch) in SCALING_MODELS.items():
        layers = get_model(name).layers
        for wafer, sizes in SYSTEMS.items():
            one_weak = weight_streaming(layers, wafer, 1, per_system).samples_per_s
            one_strong = weight_streaming(layers, wafer, 1, global_batch).samples_per_s
            for n in sizes:
                weak = weight_streaming(layers, wafer, n, per_system).samples_per_s
                strong = (
                    weight_streaming(layers, wafer, n, global_batch // n).samples_per_s
                    if global_batch % n == 0 and global_batch >= n
                    else float("nan")
                )
                rows.append(
                    {
                        "model": name,
                        "wafer": wafer,
                        "systems": n,
                        "weak_batch_per_system": per_system,
                        "weak_samples_per_s": weak,
                        "weak_efficiency": weak / (n * one_weak),
                        "strong_global_batch": global_batch,
                        "strong_samples_per_s": strong,
                        "strong_efficiency": strong / (n * one_strong),
                    }
                )
    return pd.DataFrame(rows)


def generation_table() -> pd.DataFrame:
    """One system of each generation, same model and batch: the ratio the presets alone produce."""
    rows = []
    for name, batch in (("bert_large", 1024), ("gpt2_small", 256), ("gpt3_xl", 128), ("gpt3_13b", 128)):
        layers = get_model(name).layers
        rates = {w: weight_streaming(layers, w, 1, batch).samples_per_s for w in ("wse2", "wse3")}
        rows.append(
            {
                "model": name,
                "batch": batch,
                "wse2_samples_per_s": rates["wse2"],
                "wse3_samples_per_s": rates["wse3"],
                "wse3_over_wse2": rates["wse3"] / rates["wse2"],
            }
        )
    return pd.DataFrame(rows)


def public_checks(scaling: pd.DataFrame, generation: pd.DataFrame) -> pd.DataFrame:
    """The model's figures next to what Cerebras and the measurements say in words or numbers."""
    weak = scaling[(scaling["model"] == "gpt3_xl") & (scaling["wafer"] == "wse2")].set_index("systems")
    strong_two = weak.loc[2, "strong_efficiency"]
    mfu = _mfu("gpt3_13b", 128)
    peak = hardware.CS2_PUBLISHED_PEAK_FLOPS_PER_S / 1e15
    days = _cerebras_gpt_days(16)
    return pd.DataFrame(
        [
            {
                "statement": "'near-perfect linear scaling' to 192 CS-2 (appliance-mode-blog#Introduction)",
                "model": f"GPT-3 XL, 64 sequences per system: efficiency {weak.loc[192, 'weak_efficiency']:.3f} "
                f"at 192 systems, {weak.loc[16, 'weak_efficiency']:.3f} at 16",
            },
            {
                "statement": "'from one CS-2 to two, the time to train is cut in half' (Cerebras glossary, "
                "Wafer-Scale Cluster)",
                "model": f"GPT-3 XL, global batch 1024 on 2 systems: {strong_two:.3f} of twice one system",
            },
            {
                "statement": "the WSE-3 'delivers twice the performance' of the WSE-2 (Cerebras, 2024-03)",
                "model": "one system: "
                + ", ".join(f"{r.model} {r.wse3_over_wse2:.2f}x" for r in generation.itertuples()),
            },
            {
                "statement": f"large GPT models reach about a quarter of the CS-2's {peak:g} PFLOP/s "
                "(measured, calibration README)",
                "model": f"GPT-3 13B, batch 128: model FLOPs {mfu:.3f} of {peak:g} PFLOP/s",
            },
            {
                "statement": "all seven Cerebras-GPT models (111M to 13B, 20 tokens per parameter) trained on "
                "Andromeda's 16 CS-2 'in just a few weeks' (Cerebras, 2023-03)",
                "model": f"{days:.1f} days for the seven at 16 systems, batch 1024 (an older software release "
                "than the calibration runs' may have been slower)",
            },
        ]
    )


def _mfu(name: str, batch: int) -> float:
    model = get_model(name)
    rate = weight_streaming(model.layers, "wse2", 1, batch).samples_per_s
    return rate * model.flops_per_sample / hardware.CS2_PUBLISHED_PEAK_FLOPS_PER_S


def _cerebras_gpt_days(systems: int, global_batch: int = 1024) -> float:
    """Days to train the seven Cerebras-GPT models on ``systems`` CS-2, 20 tokens per parameter."""
    total_s = 0.0
    for layers, width, heads, params in CEREBRAS_GPT.values():
        config = {"model_type": "gpt2", "n_layer": layers, "n_embd": width, "n_head": heads, "vocab_size": 50257}
        model = model_from_config({**config, "n_positions": 2048})
        rate = weight_streaming(model.layers, "wse2", systems, global_batch // systems).samples_per_s
        total_s += 20 * params / 2048 / rate
    return total_s / 86400


# --- what the page shows and quotes -----------------------------------------------------------------


def validation_tables(data: list[Run], cross_validate: bool = True) -> dict[str, pd.DataFrame]:
    """Every table of the page, by name: ``performance_validation_NAME.csv`` holds each whole (the
    runs' table is ``performance_validation.csv``)."""
    scaling, generations = scaling_table(), generation_table()
    return {
        "runs": validation_table(data, cross_validate),
        "parameters": parameter_table(),
        "modes": mode_table(data),
        "scaling": scaling,
        "generations": generations,
        "public": public_checks(scaling, generations),
    }


PAGE_SYSTEMS = (1, 2, 16, 192, 2048)  # the cluster sizes of the scaling table shown on the page


def page_scaling(scaling: pd.DataFrame) -> pd.DataFrame:
    """The scaling rows the page shows (every size is in the CSV)."""
    return scaling[scaling["systems"].isin(PAGE_SYSTEMS)]


def fit_summary(table: pd.DataFrame, refit_log_ratios: np.ndarray) -> dict[str, Any]:
    """The errors the page opens with, from the runs' table (:func:`validation_table`): the stored fit's
    and its worst run, the leave-one-out fits' (when the table has them), a fit made now, the
    uncalibrated model's, and the GPT and BERT runs' apart."""
    logs = np.log(table["ratio"].to_numpy())
    ideal = np.log(table["peak_model_ratio"].to_numpy())
    family = table["model"].str
    summary: dict[str, Any] = {
        "runs": len(table),
        "error": error(logs),
        "worst": worst(logs),
        "worst_run": table["id"].iloc[int(np.argmax(np.abs(logs)))],
        "refit_error": error(refit_log_ratios),
        "uncalibrated_error": error(ideal),
        "uncalibrated_worst": worst(ideal),
        "gpt_error": error(np.log(table[family.startswith("gpt")]["ratio"].to_numpy())),
        "bert_error": error(np.log(table[family.startswith("bert")]["ratio"].to_numpy())),
    }
    if "loo_ratio" in table:
        loo = np.log(table["loo_ratio"].to_numpy())
        summary |= {
            "loo_error": error(loo),
            "loo_worst": worst(loo),
            "loo_worst_run": table["id"].iloc[int(np.argmax(np.abs(loo)))],
        }
    return summary


def batch_rise(modes: pd.DataFrame) -> pd.DataFrame:
    """Per BERT model of :func:`mode_table`: samples/s at its largest batch over its smallest, measured,
    in weight streaming and in a resident pipeline."""

    def rise(rates: pd.Series) -> float:
        return float(rates.iloc[-1] / rates.iloc[0])

    ordered = modes.sort_values(["model", "global_batch"])
    return ordered.groupby("model").agg(
        measured=("measured_samples_per_s", rise),
        streaming=("weight_streaming_samples_per_s", rise),
        pipelined=("pipelined_samples_per_s", rise),
    )


def data_figures(data: list[Run]) -> dict[str, Any]:
    """What the page's prose says of the measured runs themselves: how far BERT-Base rises from batch
    128 to 2,048, its peak and where its rate ends, the GPT runs' largest input rate, and the share of
    the attention core in the smallest and the largest GPT model's forward FLOPs."""
    bert_base = sorted((run.global_batch, run.measured_samples_per_s) for run in data if run.model.name == "bert_base")
    rate = dict(bert_base)
    gpt = sorted((run for run in data if run.model.family == "gpt2"), key=lambda run: run.model.params)

    def attention_share(run: Run) -> float:
        layers = run.model.layers
        return sum(layer.attention_core_forward_flops for layer in layers) / sum(
            layer.forward_flops for layer in layers
        )

    peak_batch, peak = max(bert_base, key=lambda entry: entry[1])
    return {
        "bert_base_rise_128_to_2048": rate[2048] / rate[128],
        "bert_base_peak_samples_per_s": peak,
        "bert_base_peak_batch": peak_batch,
        "bert_base_last_samples_per_s": bert_base[-1][1],
        "bert_base_last_batch": bert_base[-1][0],
        "gpt_max_tokens_per_s": max(run.measured_samples_per_s * (run.model.seq_len or 1) for run in gpt),
        "smallest_gpt": gpt[0].model.name,
        "smallest_gpt_attention_share": attention_share(gpt[0]),
        "largest_gpt": gpt[-1].model.name,
        "largest_gpt_attention_share": attention_share(gpt[-1]),
    }
