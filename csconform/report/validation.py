"""The tables of the performance model against measured runs (``performance_validation.md``).

Every run of the calibration set is predicted by the stored fit and, for the runs it fitted, by the
fits that left out the run's model family, its source and its release (grouped cross-validation,
:mod:`csconform.perf.calibration.band`); the runs kept to judge (``use`` = ``judge``) were never
fitted, so the stored fit's prediction of them is already of unseen runs, and the table says whether
each lies inside the band a plan states for it. The tables also show why the runs are
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
from csconform.perf.calibration.band import (
    BAND_GROUPINGS,
    band_key,
    band_limits,
    grouped_cross_validation,
    inside_band,
)
from csconform.perf.calibration.fit import error, fitted_runs, worst
from csconform.perf.calibration.measured_runs import Run
from csconform.perf.execution.efficiency import IDEAL, calibration_record, fitted
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
    """Predicted against measured samples/s for every run: the stored fit, whether the run lies inside
    the band stated for it and, optionally, each grouping's held-out ratio (``family_out_ratio``: by the
    fit without the run's model family; empty for a judging run, or a group no fit could leave out)."""
    cal, band_record = fitted(), calibration_record()["band"]
    held: dict[tuple[str, str], float] = {}
    if cross_validate:
        validation = grouped_cross_validation(fitted_runs(data))
        held = {(h.run_id, h.grouping): math.exp(h.log_ratio) for h in validation.held_out}
    rows = []
    for run in data:
        predicted = run.predict(cal)
        band, slower = band_limits(band_record, run.mode, run.model.family, run.wafer)
        ratio = predicted / run.measured_samples_per_s
        row: dict[str, Any] = {
            "id": run.id,
            "use": run.use,
            "model": run.model.name,
            "params": run.model.params,
            "seq_len": run.model.seq_len,
            "global_batch": run.global_batch,
            "systems": run.systems,
            "wafer": run.wafer,
            "mode": run.mode,
            "release": run.release or "",
            "measured_samples_per_s": run.measured_samples_per_s,
            "predicted_samples_per_s": predicted,
            "ratio": ratio,
            "band": band,
            "band_slower": slower,
            "band_class": band_key(run.mode, run.model.family),
            "inside_band": inside_band(ratio, (band, slower)),
        }
        if cross_validate:
            for grouping in BAND_GROUPINGS:
                row[f"{grouping}_out_ratio"] = held.get((run.id, grouping), math.nan)
        row["peak_model_ratio"] = run.predict(IDEAL) / run.measured_samples_per_s
        rows.append(row)
    return pd.DataFrame(rows)


def group_table(record: dict[str, Any]) -> pd.DataFrame:
    """The grouped cross-validation's residuals group by group, as the calibration record stores them: for
    each grouping (family, source, release, configuration) and each group it left out, the runs predicted
    by the fit without it, their error and the worst of them."""
    rows = [
        {"grouping": name, "group": group, "runs": entry["runs"], "error": entry["error"], "worst": entry["worst"]}
        for name, grouping in record["band"]["groupings"].items()
        for group, entry in grouping["groups"].items()
    ]
    return pd.DataFrame(rows, columns=["grouping", "group", "runs", "error", "worst"])


def band_table(runs_table: pd.DataFrame, record: dict[str, Any]) -> pd.DataFrame:
    """Each band a plan states (per execution mode and model class) and how many predictions it covers:
    the held-out predictions of the fitted runs of its class (family, source and release left out: what
    the band is taken from) and the runs kept to judge, which no fit saw."""
    held_columns = [f"{g}_out_ratio" for g in BAND_GROUPINGS if f"{g}_out_ratio" in runs_table]
    rows = []
    for key, entry in record["band"]["classes"].items():
        factor = float(entry["factor"])
        members = runs_table[runs_table["band_class"] == key]
        held = members[members["use"] == "fit"][held_columns].to_numpy(dtype=float).ravel()
        held = held[np.isfinite(held)]
        judged = members[members["use"] == "judge"]["ratio"].to_numpy(dtype=float)
        rows.append(
            {
                "class": key,
                "factor": factor,
                "taken_from": entry["from"],
                "held_out_predictions": held.size,
                "held_out_inside": int(np.sum((held >= 1 / factor) & (held <= factor))),
                "judged_runs": judged.size,
                "judged_inside": int(members[members["use"] == "judge"]["inside_band"].sum()),
            }
        )
    return pd.DataFrame(rows)


def judged_table(runs_table: pd.DataFrame, record: dict[str, Any]) -> pd.DataFrame:
    """The runs kept to judge (no fit saw them), by wafer generation: how many (and how many the
    calibration ``record`` fitted there), their error and worst ratio, how many lie inside the band a
    plan states for them, and the median ratio (above 1: the model is too fast there). A wafer
    generation of few fitted runs is where the model extrapolates through its presets: this is what
    the public record says of that."""
    judged = runs_table[runs_table["use"] == "judge"]
    fitted_by_wafer = record["band"]["fitted_runs_by_wafer"]
    rows = []
    for wafer, group in judged.groupby("wafer", sort=True):
        logs = np.log(group["ratio"].to_numpy(dtype=float))
        rows.append(
            {
                "wafer": wafer,
                "fitted_runs": int(fitted_by_wafer.get(wafer, 0)),
                "judged_runs": len(group),
                "error": error(logs),
                "worst": worst(logs),
                "median_ratio": float(np.exp(np.median(logs))),
                "inside_band": int(group["inside_band"].sum()),
            }
        )
    columns = ["wafer", "fitted_runs", "judged_runs", "error", "worst", "median_ratio", "inside_band"]
    return pd.DataFrame(rows, columns=columns)


def release_table(record: dict[str, Any]) -> pd.DataFrame:
    """Per release generation of the fitted runs (2.0.x: every 2.0 release): how many weight-streaming runs
    state it, whether they determine a figure of its own
    (:data:`~csconform.perf.calibration.fit.MIN_RUNS_PER_RELEASE`), and the figure a plan of it uses."""
    cal = fitted()
    rows = []
    for release, entry in record.get("release_generations", {}).items():
        used = cal.compute_scale("weight_streaming", release)
        rows.append(
            {
                "release": f"{release}.x",
                "weight_streaming_runs": entry["weight_streaming_runs"],
                "figure": entry["figure"],
                "planned_with": used,
            }
        )
    return pd.DataFrame(rows, columns=["release", "weight_streaming_runs", "figure", "planned_with"])


def parameter_table() -> pd.DataFrame:
    record = calibration_record()["parameters"]
    return pd.DataFrame(
        [
            {
                "figure": name,
                "value": entry["value"],
                "unit": entry["unit"],
                "fitted": entry["fitted"],
                "relative_standard_error": entry["relative_standard_error"],
                "cross_validation_min": entry["cross_validation_range"][0],
                "cross_validation_max": entry["cross_validation_range"][1],
                "meaning": entry["meaning"],
            }
            for name, entry in record.items()
        ]
    )


def mode_table(data: list[Run]) -> pd.DataFrame:
    """The paper's BERT batch sweep (the BERT runs that state no release) three ways: measured, weight
    streaming and a resident pipeline (one placement per model; each batch then fills and drains it)."""
    cal = fitted()
    placed: dict[str, Any] = {}
    rows = []
    for run in data:
        if run.model.family != "bert" or run.release is not None:
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
    runs_table, record = validation_table(data, cross_validate), calibration_record()
    return {
        "runs": runs_table,
        "groups": group_table(record),
        "bands": band_table(runs_table, record),
        "judged": judged_table(runs_table, record),
        "releases": release_table(record),
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
    on the runs it fitted and its worst run, each grouping's held-out error (when the table has them),
    the judging runs' error and how many lie inside their band, a fit made now, the uncalibrated
    model's, and the GPT and BERT runs' apart."""
    fitted_rows = table[table["use"] != "judge"]
    judged = table[table["use"] == "judge"]
    logs = np.log(fitted_rows["ratio"].to_numpy())
    ideal = np.log(fitted_rows["peak_model_ratio"].to_numpy())
    family = fitted_rows["model"].str
    summary: dict[str, Any] = {
        "runs": len(fitted_rows),
        "error": error(logs),
        "worst": worst(logs),
        "worst_run": fitted_rows["id"].iloc[int(np.argmax(np.abs(logs)))],
        "refit_error": error(refit_log_ratios),
        "uncalibrated_error": error(ideal),
        "uncalibrated_worst": worst(ideal),
        "gpt_error": error(np.log(fitted_rows[family.startswith("gpt")]["ratio"].to_numpy())),
        "bert_error": error(np.log(fitted_rows[family.startswith("bert")]["ratio"].to_numpy())),
        "judged": len(judged),
    }
    if len(judged):
        judged_logs = np.log(judged["ratio"].to_numpy())
        summary |= {
            "judged_error": error(judged_logs),
            "judged_worst": worst(judged_logs),
            "judged_inside_band": int(judged["inside_band"].sum()),
        }
    for grouping in BAND_GROUPINGS:
        column = f"{grouping}_out_ratio"
        if column in table and table[column].notna().any():
            held = np.log(table[column].dropna().to_numpy())
            summary[f"{grouping}_out_error"] = error(held)
            summary[f"{grouping}_out_worst"] = worst(held)
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
    """What the page's prose says of the paper's runs (those that state no release) themselves: how far
    BERT-Base rises from batch 128 to 2,048, its peak and where its rate ends, the GPT runs' largest
    input rate, and the share of the attention core in the smallest and the largest GPT model's forward FLOPs."""
    data = [run for run in data if run.release is None]
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
