"""Every number on the performance pages against the data they are built from.

The tables of ``performance.md`` and ``performance_validation.md`` are read back from the markdown by
their headings and column labels (``markdown_tables``) and compared, cell by cell, with the frames
written to the CSVs beside them; each number the prose quotes is recomputed here from the measured
runs, the calibration record or the hardware presets. The tables themselves are checked against what
their docstrings and the page say they hold, recomputed from :mod:`csconform.perf` the direct way.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from markdown_tables import assert_table_shows, tables

from csconform.perf import hardware
from csconform.perf.calibration.band import GroupedValidation, HeldOut, stated_band
from csconform.perf.calibration.fit import fitted_runs
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, runs
from csconform.perf.execution.efficiency import IDEAL, PARAMETERS, calibration_record, fitted
from csconform.perf.execution.pipelined import fits_pipelined, pipelined
from csconform.perf.execution.streaming import weight_streaming
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.zoo import ZOO_NAMES, get_model
from csconform.perf.plan import plan
from csconform.report import performance, validation
from csconform.report.performance_page import performance_markdown
from csconform.report.validation_page import validation_markdown

# --- the performance page ---------------------------------------------------------------------------


def _perf_page(perf_tables: dict[str, pd.DataFrame]) -> str:
    return performance_markdown(perf_tables, calibration_record(), performance.pipelined_refusal())


@pytest.fixture(scope="module")
def perf_tables() -> dict[str, pd.DataFrame]:
    return performance.performance_tables()


@pytest.fixture(scope="module")
def perf_page(perf_tables: dict[str, pd.DataFrame]) -> str:
    return _perf_page(perf_tables)


def test_the_performance_page_shows_its_tables_from_the_csv_frames(
    perf_tables: dict[str, pd.DataFrame], perf_page: str
) -> None:
    found = tables(perf_page)
    throughput = perf_tables["throughput"]
    one_system = throughput[throughput["systems"] == 1].drop(columns="systems")  # the heading says one system
    assert_table_shows(found["Throughput on one system"], one_system)
    scaling = perf_tables["scaling"]
    assert_table_shows(found["Scaling of weight streaming on CS-2 clusters"], scaling[scaling["systems"] == 192])
    kernels = perf_tables["kernels"]
    assert_table_shows(found["Per-kernel breakdown (BERT-large, pipelined, WSE-2)"], kernels.iloc[:12])
    assert "(first 12 kernels; all in `performance_kernels.csv`)" in perf_page and len(kernels) > 12
    layers = perf_tables["streaming_layers"]
    assert_table_shows(found["Weight streaming, per layer (GPT-3 XL, 16 CS-2)"], layers.iloc[:6])
    assert_table_shows(found["The model's figures against published ones"], perf_tables["published"])
    assert set(found) == {
        "Throughput on one system",
        "Scaling of weight streaming on CS-2 clusters",
        "Per-kernel breakdown (BERT-large, pipelined, WSE-2)",
        "Weight streaming, per layer (GPT-3 XL, 16 CS-2)",
        "The model's figures against published ones",
    }


def test_the_performance_page_s_prose_quotes_the_calibration_and_the_presets(perf_page: str) -> None:
    record = calibration_record()
    quoted = re.search(
        r"error (\d+\.\d{3}) on held-out model families, sources and releases, (\d+) measured runs fitted", perf_page
    )
    assert quoted is not None
    assert float(quoted[1]) == pytest.approx(record["fit"]["held_out_error"], abs=5e-4)
    assert int(quoted[2]) == len(fitted_runs(runs(read_measured(measured_csv())))) == record["data"]["rows"]
    gpt3_xl = get_model("gpt3_xl")
    assert f"with 131,072 tokens per system ({2**17 // gpt3_xl.seq_len} sequences of 2,048)" in perf_page
    assert gpt3_xl.seq_len == 2048 and performance.TOKENS_PER_SYSTEM == 2**17
    assert "splits a fixed global batch of 1,536:" in perf_page and performance.STRONG_GLOBAL_BATCH == 1536
    link_tbps = hardware.get_wafer("wse2").system_io_bytes_per_s * 8 / 1e12
    assert link_tbps == pytest.approx(1.2) and "each system's 1.2 Tb/s link" in perf_page
    assert "(PERF-006 checks it at 8 sequences per system: efficiency at least 0.9 up to 192 systems)" in perf_page
    for figure in ("throughput", "placement_gpt2_medium", "pipeline_timeline", "streaming_gpt3_xl", "kernels"):
        assert f"(figures/performance_{figure}.png)" in perf_page


def test_a_model_too_large_to_pipeline_is_quoted_with_the_planner_s_refusal(
    perf_tables: dict[str, pd.DataFrame],
) -> None:
    refusal = performance.pipelined_refusal()
    assert refusal.startswith("Asking for gpt3_175b in pipelined mode is refused: `the model (")
    assert "does not fit the wse2 wafer in pipelined mode" in refusal and refusal.endswith("`")
    assert performance.pipelined_refusal("fc_mnist") == "fc_mnist was accepted in pipelined mode (unexpected)."
    page = performance_markdown(perf_tables, calibration_record(), "THE REFUSAL")
    assert "\nTHE REFUSAL\n" in page


# --- the performance page's tables ------------------------------------------------------------------


def test_every_zoo_model_on_every_wafer_pipelined_where_it_fits_and_streamed_on_each_cluster_size(
    perf_tables: dict[str, pd.DataFrame],
) -> None:
    throughput = perf_tables["throughput"]
    expected = set()
    for name in ZOO_NAMES:
        model = get_model(name)
        for wafer, sizes in {"wse1": (1,), "wse2": (1, 4, 16, 64, 192), "wse3": (1, 16, 192, 2048)}.items():
            if fits_pipelined(model.layers, wafer):
                expected.add((name, wafer, "pipelined", 1))
            expected |= {(name, wafer, "weight_streaming", n) for n in sizes}
    seen = list(zip(throughput["model"], throughput["wafer"], throughput["mode"], throughput["systems"], strict=True))
    assert len(seen) == len(set(seen)) and set(seen) == expected
    assert {"pipelined", "weight_streaming"} == set(throughput["mode"])


THROUGHPUT_ROWS = [
    ("gpt3_xl", "wse2", "weight_streaming", 16, 64),  # 131,072 tokens of 2,048 per system
    ("bert_large", "wse3", "weight_streaming", 192, 2**17 // 128),  # sequences of 128
    ("resnet50", "wse2", "weight_streaming", 4, 256),  # an image model: 256 images per system
    ("bert_large", "wse2", "pipelined", 1, None),  # the model's default batch
]


@pytest.mark.parametrize(("name", "wafer", "mode", "systems", "batch_per_system"), THROUGHPUT_ROWS)
def test_a_throughput_row_is_the_plan_of_its_model_wafer_mode_and_cluster(
    perf_tables: dict[str, pd.DataFrame],
    name: str,
    wafer: str,
    mode: str,
    systems: int,
    batch_per_system: int | None,
) -> None:
    throughput = perf_tables["throughput"]
    (row,) = throughput[
        (throughput["model"] == name)
        & (throughput["wafer"] == wafer)
        & (throughput["mode"] == mode)
        & (throughput["systems"] == systems)
    ].to_dict("records")
    model = get_model(name)
    batch = None if batch_per_system is None else batch_per_system * systems
    expected = plan(name, wafer, mode=mode, systems=systems, batch=batch)
    assert row["global_batch"] == (batch or model.default_batch) == expected.batch
    assert row["params"] == model.params
    assert row["samples_per_s"] == pytest.approx(expected.samples_per_s)
    assert row["bound_samples_per_s"] == pytest.approx(expected.bound_samples_per_s)
    assert row["tokens_per_s"] == pytest.approx(expected.samples_per_s * (model.seq_len or 1))
    peak = hardware.get_wafer(wafer).peak_flops_per_s
    assert row["model_flops_utilisation"] == pytest.approx(
        expected.samples_per_s * model.flops_per_sample / (systems * peak)
    )
    assert 0 < row["model_flops_utilisation"] < 1


def test_the_batch_per_system_is_131072_tokens_or_256_images() -> None:
    assert performance.batch_per_system("gpt3_xl") == 64
    assert get_model("bert_large").seq_len == 128 and performance.batch_per_system("bert_large") == 1024
    assert performance.batch_per_system("resnet50") == 256
    assert performance.batch_per_system("fc_mnist") == 256


def test_weak_and_strong_scaling_are_samples_over_n_times_one_system(perf_tables: dict[str, pd.DataFrame]) -> None:
    scaling = perf_tables["scaling"]
    assert list(scaling.columns) == ["model", "systems", "weak_efficiency", "strong_efficiency"]
    assert set(scaling["model"]) == {"gpt3_xl", "gpt3_13b", "gpt3_175b"}
    assert list(scaling[scaling["model"] == "gpt3_xl"]["systems"]) == [1, 2, 4, 8, 16, 32, 64, 128, 192]
    for name in ("gpt3_xl", "gpt3_175b"):
        layers = get_model(name).layers
        per_system = 2**17 // get_model(name).seq_len
        one_weak = weight_streaming(layers, "wse2", 1, per_system).samples_per_s
        one_strong = weight_streaming(layers, "wse2", 1, 1536).samples_per_s
        for n in (4, 192):
            (row,) = scaling[(scaling["model"] == name) & (scaling["systems"] == n)].to_dict("records")
            weak = weight_streaming(layers, "wse2", n, per_system).samples_per_s
            strong = weight_streaming(layers, "wse2", n, 1536 // n).samples_per_s
            assert row["weak_efficiency"] == pytest.approx(weak / (n * one_weak))
            assert row["strong_efficiency"] == pytest.approx(strong / (n * one_strong))


def test_the_kernel_and_streamed_layer_tables_hold_the_plans_figures_in_their_units(
    perf_tables: dict[str, pd.DataFrame],
) -> None:
    pipelined_plan = plan("bert_large", "wse2", mode="pipelined")
    kernels = perf_tables["kernels"]
    assert len(kernels) == len(pipelined_plan.pipeline.kernels)
    for row, kernel, entry in zip(
        kernels.to_dict("records"), pipelined_plan.pipeline.kernels, pipelined_plan.kernels, strict=True
    ):
        assert row["kernel"] == kernel.name
        assert (row["x"], row["y"], row["width"], row["height"]) == (
            kernel.rect.x,
            kernel.rect.y,
            kernel.rect.width,
            kernel.rect.height,
        )
        assert row["cores"] == kernel.rect.width * kernel.rect.height
        assert row["memory_MB"] == pytest.approx(kernel.memory_bytes / 1e6, rel=1e-12)
        assert row["inflight_samples"] == kernel.inflight_samples
        assert row["compute_cycles_per_sample"] == kernel.compute_cycles_per_sample
        assert row["communication_cycles_per_sample"] == kernel.communication_cycles_per_sample
        assert (row["utilisation"], row["samples_per_s"]) == (entry["utilisation"], entry["samples_per_s"])
    assert list(performance.kernel_table("fc_mnist")["kernel"]) == ["fc1", "fc2", "fc3"]

    streamed = plan("gpt3_xl", "wse2", systems=16, batch=16 * 64).streaming.layers
    layers = perf_tables["streaming_layers"]
    assert len(layers) == len(streamed)
    for row, layer in zip(layers.to_dict("records"), streamed, strict=True):
        assert (row["layer"], row["params"], row["bound"]) == (layer.name, layer.params, layer.bound)
        for column, seconds in (
            ("forward_compute_ms", layer.forward_compute_s),
            ("backward_compute_ms", layer.backward_compute_s),
            ("weights_in_ms", layer.weights_in_s),
            ("gradients_out_ms", layer.gradients_out_s),
            ("latency_ms", layer.latency_s),
        ):
            assert row[column] == pytest.approx(1e3 * seconds), column
    other = performance.streaming_layer_table("gpt2_small", systems=2)
    assert len(other) == len(plan("gpt2_small", "wse2", systems=2, batch=2 * 64).streaming.layers)


def test_every_hardware_figure_is_listed_with_its_source(perf_tables: dict[str, pd.DataFrame]) -> None:
    frame = perf_tables["hardware"]
    assert list(frame.columns)[:2] == ["wafer", "figure"] and {"value", "source"} <= set(frame.columns)
    for name, wafer in hardware.WAFERS.items():
        assert frame[frame["wafer"] == name].drop(columns="wafer").to_dict("records") == wafer.figures()
    memoryx = frame[frame["wafer"] == "MemoryX"].set_index("figure")
    for figure in ("min_capacity_bytes", "max_capacity_bytes", "max_parameters", "bytes_per_parameter"):
        assert memoryx.loc[figure, "value"] == getattr(hardware.MEMORYX, figure)
        assert memoryx.loc[figure, "source"] == hardware.MEMORYX.sources[figure]
    swarmx = frame[frame["wafer"] == "SwarmX"].set_index("figure")
    assert list(swarmx.index) == ["fan_out", "hop_latency_s"]
    for figure in swarmx.index:
        assert swarmx.loc[figure, "value"] == getattr(hardware.SWARMX, figure)
        assert swarmx.loc[figure, "source"] == hardware.SWARMX.sources[figure]
    assert len(frame) == sum(len(w.figures()) for w in hardware.WAFERS.values()) + 4 + 2


def test_the_published_figures_are_modeled_published_and_their_ratio(perf_tables: dict[str, pd.DataFrame]) -> None:
    frame = perf_tables["published"].set_index("quantity")
    assert list(perf_tables["published"].columns) == ["quantity", "modeled", "published", "source", "ratio"]
    assert (frame["ratio"] == frame["modeled"] / frame["published"]).all()
    w2 = hardware.get_wafer("wse2")
    peak = w2.published_cores * w2.flops_per_core_per_cycle * w2.clock_hz
    assert frame.loc["CS-2 dense FP16 peak (FLOP/s)", ["modeled", "published"]].tolist() == [
        peak,
        hardware.CS2_PUBLISHED_PEAK_FLOPS_PER_S,
    ]
    assert frame.loc["Andromeda, 16 CS-2 (FLOP/s)", "modeled"] == 16 * peak
    assert frame.loc["Andromeda, 16 CS-2 (FLOP/s)", "published"] == hardware.ANDROMEDA["peak_flops_per_s"]
    assert frame.loc["cores in 192 CS-2", ["modeled", "published"]].tolist() == [192 * w2.published_cores, 150e6]
    # the two cluster figures cite public-facts#Hardware (docs/sources.md)
    assert frame.loc[["CS-2 dense FP16 peak (FLOP/s)", "Andromeda, 16 CS-2 (FLOP/s)"], "source"].tolist() == [
        "public-facts#Hardware",
        "public-facts#Hardware",
    ]
    assert frame.loc["cores in 192 CS-2", "source"] == "appliance-mode-blog#Introduction (more than)"
    for name in ZOO_NAMES:
        model = get_model(name)
        row = frame.loc[f"{name} parameters"]
        assert (row["modeled"], row["published"], row["source"]) == (model.params, model.published_params, model.source)
    for name in ("gpt3_xl", "gpt3_175b"):
        model = get_model(name)
        row = frame.loc[f"{name} training FLOPs per token / 6N"]
        assert row["modeled"] == pytest.approx(model.flops_per_sample / model.seq_len)
        assert row["published"] == 6 * model.params
        assert row["source"] == "public-facts#Hardware (6N)"
    assert len(frame) == 3 + len(ZOO_NAMES) + 2


# --- the validation page ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def measured() -> list:
    return runs(read_measured(measured_csv()))


def _validation_tables(measured: list) -> dict[str, pd.DataFrame]:
    """The page's tables; the held-out columns stand in for the (slow) grouped cross-validation, made up
    so that each run's differs (empty for the judging runs, as the real ones are): the page only shows them."""
    found = validation.validation_tables(measured, cross_validate=False)
    runs_table = found["runs"]
    fitted_rows = runs_table["use"] == "fit"
    for step, grouping in enumerate(("family", "source", "release"), 1):
        made_up = runs_table["ratio"] * (1 + 0.01 * step * np.arange(len(runs_table)))
        runs_table.insert(len(runs_table.columns) - 1, f"{grouping}_out_ratio", made_up.where(fitted_rows))
    return found


def _validation_page(validation_tables: dict[str, pd.DataFrame], measured: list) -> str:
    fitted_rows = validation_tables["runs"][validation_tables["runs"]["use"] == "fit"]
    refit_logs = np.log(fitted_rows["ratio"].to_numpy() * 1.001)
    summary = validation.fit_summary(validation_tables["runs"], refit_logs)
    return validation_markdown(validation_tables, calibration_record(), summary, validation.data_figures(measured))


@pytest.fixture(scope="module")
def validation_tables(measured: list) -> dict[str, pd.DataFrame]:
    return _validation_tables(measured)


@pytest.fixture(scope="module")
def validation_page(validation_tables: dict[str, pd.DataFrame], measured: list) -> str:
    return _validation_page(validation_tables, measured)


def test_the_validation_page_shows_its_tables_from_the_csv_frames(
    validation_tables: dict[str, pd.DataFrame], validation_page: str
) -> None:
    found = tables(validation_page)
    assert_table_shows(
        found["What makes real runs slower than the peak: the fitted figures"], validation_tables["parameters"]
    )
    assert_table_shows(found["Which execution mode the runs used"], validation_tables["modes"])
    assert_table_shows(found["Every run"], validation_tables["runs"])
    assert_table_shows(found["Grouped cross-validation and the band"], validation_tables["groups"])
    assert_table_shows(found["Grouped cross-validation and the band (2)"], validation_tables["bands"])
    assert_table_shows(found["Grouped cross-validation and the band (3)"], validation_tables["judged"])
    assert_table_shows(found["Grouped cross-validation and the band (4)"], validation_tables["releases"])
    scaling = validation_tables["scaling"]
    assert_table_shows(found["Clusters and wafer generations"], scaling[scaling["systems"].isin([1, 2, 16, 192, 2048])])
    assert "(every size in `performance_validation_scaling.csv`)" in validation_page
    assert_table_shows(found["Clusters and wafer generations (2)"], validation_tables["generations"])
    assert_table_shows(found["Against public statements"], validation_tables["public"])
    assert len(found) == 10


def _log_error(ratios: Any) -> tuple[float, float, int]:
    logs = np.abs(np.log(np.asarray(ratios, dtype=float)))
    return float(np.exp(logs.mean())), float(np.exp(logs.max())), int(logs.argmax())


def test_the_validation_summary_quotes_the_errors_of_the_runs_table(
    validation_tables: dict[str, pd.DataFrame], validation_page: str
) -> None:
    everything = validation_tables["runs"]
    table = everything[everything["use"] == "fit"]
    ids = list(table["id"])
    stored, stored_worst, at = _log_error(table["ratio"])
    assert (
        f"- stored fit, on the {len(table)} runs it fitted: error **{stored:.3f}**, worst run {stored_worst:.3f} "
        f"({ids[at]})" in validation_page
    )
    for grouping in ("family", "source", "release"):
        held, held_worst, _ = _log_error(table[f"{grouping}_out_ratio"])
        assert (
            f"- each run predicted by the fit without its {grouping}: error **{held:.3f}**, worst run {held_worst:.3f}"
            in validation_page
        )
    band = calibration_record()["band"]
    assert f"lie within x/ {band['factor']:.3g} (per mode and model class: " in validation_page
    judged = everything[everything["use"] == "judge"]
    judge_error, judge_worst, _ = _log_error(judged["ratio"])
    assert (
        f"- the {len(judged)} runs kept to judge (never fitted): error **{judge_error:.3f}**, worst run "
        f"{judge_worst:.3f}, {int(judged['inside_band'].sum())} of {len(judged)} inside the band stated for them"
        in validation_page
    )
    refit, _, _ = _log_error(table["ratio"] * 1.001)
    assert f"- refitting now gives error {refit:.3f} (the stored figures" in validation_page
    ideal, ideal_worst, _ = _log_error(table["peak_model_ratio"])
    assert f"is off by {ideal:.2f} on average and up to {ideal_worst:.1f}x" in validation_page
    gpt, _, _ = _log_error(table[table["model"].str.startswith("gpt")]["ratio"])
    bert, _, _ = _log_error(table[table["model"].str.startswith("bert")]["ratio"])
    assert f"- GPT runs alone: error {gpt:.3f}; BERT runs alone: {bert:.3f}" in validation_page
    assert f"predicts the {len(table)} published training runs" in validation_page


def test_the_validation_prose_quotes_the_measured_runs(validation_page: str) -> None:
    rows = pd.read_csv(measured_csv())
    rows = rows[rows["release"].isna()]  # the paper's runs, which the prose describes
    bert_base = rows[rows["model"] == "bert_base"].set_index("global_batch")["samples_per_s"]
    rise = bert_base[2048] / bert_base[128]
    assert f"rises {rise:.1f}-fold from batch 128 to 2,048" in validation_page and 7 < rise < 7.2
    assert bert_base.idxmax() == 2048 and bert_base.index.max() == 16384
    assert (
        f"it caps BERT-Base from batch 2,048 on (the measured rate even falls a little, {bert_base[2048]:,.0f} to "
        f"{bert_base[16384]:,.0f} samples/s at batch 16,384" in validation_page
    )
    gpt = rows[rows["model"].str.startswith("gpt")]
    tokens = (gpt["samples_per_s"] * gpt["seq_len"]).max()
    assert f"(at most {tokens / 1e6:.2f}M tokens/s measured)" in validation_page and tokens < 0.8e6
    record = calibration_record()
    assert "the range is over the fits of the grouped cross-validation" in validation_page
    assert f"Fitted {record['fitted_on']} with scipy's least squares" in validation_page
    assert record["data"]["source"] in validation_page
    assert "the system's 1.2 Tb/s is modeled" in validation_page and "its own 1.2 Tb/s link" in validation_page
    assert "(20% of the forward FLOPs in gpt3_256M, 5% in gpt3_20B)" in validation_page


def test_the_validation_prose_quotes_the_batch_sweep(
    validation_tables: dict[str, pd.DataFrame], validation_page: str
) -> None:
    modes = validation_tables["modes"]
    quoted = {}
    for name, group in modes.groupby("model"):
        first, last = group.iloc[0], group.iloc[-1]
        assert first["global_batch"] == group["global_batch"].min() and last["global_batch"] == 16384
        quoted[name] = {
            column: last[column] / first[column]
            for column in ("measured_samples_per_s", "weight_streaming_samples_per_s", "pipelined_samples_per_s")
        }
    assert set(quoted) == {"bert_base", "bert_large"}
    for column, digits in (
        ("measured_samples_per_s", ".1f"),
        ("pipelined_samples_per_s", ".2f"),
        ("weight_streaming_samples_per_s", ".1f"),
    ):
        listed = ", ".join(f"{name} {quoted[name][column]:{digits}}x" for name in ("bert_base", "bert_large"))
        assert listed in validation_page, column


# --- the validation page's tables -------------------------------------------------------------------


def test_every_run_is_predicted_by_the_stored_fit_the_uncalibrated_model_and_without_its_groups(
    measured: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The held-out columns are those of :func:`grouped_cross_validation` on the fitted runs (a stand-in
    returns known log ratios; the calibration's own tests check the cross-validation); a judging run
    has none, and every run says whether it lies inside the band stated for its mode and class."""
    few = [*measured[:5], next(run for run in measured if run.use == "judge")]
    log_ratios = np.log([1.5, 0.8, 1.0, 1.25, 0.5])
    calls = []

    def known_log_ratios(data: list) -> GroupedValidation:
        calls.append(list(data))
        held = [
            HeldOut(run.id, grouping, "g", "g", run.mode, "decoder", float(log_ratio) * step)
            for step, grouping in enumerate(("family", "source", "release"), 1)
            for run, log_ratio in zip(data, log_ratios, strict=True)
        ]
        return GroupedValidation(tuple(held), {}, {})

    monkeypatch.setattr(validation, "grouped_cross_validation", known_log_ratios)
    table = validation.validation_table(few)
    assert calls == [few[:5]]  # the judging run is never fitted
    assert list(table.columns) == [
        "id",
        "use",
        "model",
        "params",
        "seq_len",
        "global_batch",
        "systems",
        "wafer",
        "mode",
        "release",
        "measured_samples_per_s",
        "predicted_samples_per_s",
        "ratio",
        "band",
        "band_slower",
        "band_class",
        "inside_band",
        "family_out_ratio",
        "source_out_ratio",
        "release_out_ratio",
        "peak_model_ratio",
    ]
    for row, run in zip(table.to_dict("records"), few, strict=True):
        assert (row["id"], row["use"], row["model"], row["params"], row["seq_len"]) == (
            run.id,
            run.use,
            run.model.name,
            run.model.params,
            run.model.seq_len,
        )
        assert (row["global_batch"], row["systems"], row["wafer"], row["mode"], row["release"]) == (
            run.global_batch,
            run.systems,
            run.wafer,
            run.mode,
            run.release or "",
        )
        assert row["measured_samples_per_s"] == run.measured_samples_per_s
        assert row["predicted_samples_per_s"] == run.predict(fitted())
        assert row["ratio"] == pytest.approx(run.predict(fitted()) / run.measured_samples_per_s)
        stated = stated_band(run.mode, run.model.family, run.wafer)
        band, slower = stated["factor"], stated["factor"] * stated["slower_by"]
        assert (row["band"], row["band_slower"]) == (band, slower)
        assert row["inside_band"] == (1 / band <= row["ratio"] <= slower)
        assert row["band_class"] == f"{run.mode}/{'encoder' if run.model.family == 'bert' else 'decoder'}"
        assert row["peak_model_ratio"] == pytest.approx(run.predict(IDEAL) / run.measured_samples_per_s)
    for step, grouping in enumerate(("family", "source", "release"), 1):
        assert list(table[f"{grouping}_out_ratio"][:5]) == pytest.approx(np.exp(step * log_ratios))
        assert math.isnan(table[f"{grouping}_out_ratio"].iloc[5])
    without = validation.validation_table(few, cross_validate=False)
    assert len(calls) == 1  # no cross-validation asked, none run
    assert without.equals(table.drop(columns=["family_out_ratio", "source_out_ratio", "release_out_ratio"]))


def test_a_grouping_no_fit_could_leave_out_is_a_column_of_missing_numbers(
    measured: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no fold of a grouping could be fitted, its held-out column is still numbers, every one missing
    (NaN) as in a judging run's row, so the summaries and the page treat it as they treat any gap."""
    few = measured[:3]

    def family_only(data: list) -> GroupedValidation:
        held = [HeldOut(run.id, "family", "g", "g", run.mode, "decoder", 0.1) for run in data]
        return GroupedValidation(tuple(held), {}, {("source", "g"): "too few runs", ("release", "g"): "too few runs"})

    monkeypatch.setattr(validation, "grouped_cross_validation", family_only)
    table = validation.validation_table(few)
    assert table["family_out_ratio"].tolist() == pytest.approx([math.exp(0.1)] * 3)
    for grouping in ("source", "release"):
        column = table[f"{grouping}_out_ratio"]
        assert column.dtype == np.float64 and column.isna().all(), grouping


def test_the_parameter_table_is_the_calibration_record(validation_tables: dict[str, pd.DataFrame]) -> None:
    record = calibration_record()["parameters"]
    frame = validation_tables["parameters"]
    assert list(frame["figure"]) == list(record) and set(PARAMETERS) <= set(record)
    for row in frame.to_dict("records"):
        entry = record[row["figure"]]
        assert row == {
            "figure": row["figure"],
            "value": entry["value"],
            "unit": entry["unit"],
            "fitted": entry["fitted"],
            "relative_standard_error": entry["relative_standard_error"],
            "cross_validation_min": entry["cross_validation_range"][0],
            "cross_validation_max": entry["cross_validation_range"][1],
            "meaning": entry["meaning"],
        }


def test_the_judged_runs_by_wafer_are_those_of_the_runs_table_and_of_the_record(
    validation_tables: dict[str, pd.DataFrame],
) -> None:
    """Each wafer's row: its judged runs' median and worst ratio and how many lie inside their band, as
    the runs' table gives them, and what calibrate recorded of the same runs (the record's figures are
    unrounded, the table's rounded to 4 digits)."""
    runs_table, judged = validation_tables["runs"], validation_tables["judged"]
    record = calibration_record()["judged"]["wafers"]
    assert sorted(judged["wafer"]) == sorted(record) == sorted(set(runs_table[runs_table["use"] == "judge"]["wafer"]))
    for row in judged.to_dict("records"):
        mine = runs_table[(runs_table["use"] == "judge") & (runs_table["wafer"] == row["wafer"])]
        ratios = mine["ratio"].to_numpy(dtype=float)
        assert row["judged_runs"] == len(mine) == record[row["wafer"]]["judged_runs"]
        assert row["fitted_runs"] == int(((runs_table["use"] == "fit") & (runs_table["wafer"] == row["wafer"])).sum())
        assert (
            row["median_ratio"]
            == pytest.approx(np.exp(np.median(np.log(ratios))))
            == pytest.approx(record[row["wafer"]]["median_ratio"], rel=1e-3)
        )
        assert row["worst"] == pytest.approx(np.exp(np.abs(np.log(ratios)).max()))
        assert row["inside_band"] == int(mine["inside_band"].sum()) == record[row["wafer"]]["inside_band"]


def test_the_judged_table_counts_each_wafer_s_runs_from_a_small_runs_table() -> None:
    """Worked by hand: two CS-3 runs kept to judge (ratios 2 and 0.5; one inside its band) and a fitted
    run, which the table leaves out; the fitted count comes from the record, not from the rows."""
    runs_table = pd.DataFrame(
        {
            "use": ["judge", "judge", "fit"],
            "wafer": ["wse3", "wse3", "wse3"],
            "ratio": [2.0, 0.5, 1.0],
            "inside_band": [True, False, True],
        }
    )
    table = validation.judged_table(runs_table, {"band": {"fitted_runs_by_wafer": {"wse3": 7}}})
    assert list(table.columns) == [
        "wafer", "fitted_runs", "judged_runs", "error", "worst", "median_ratio", "inside_band"
    ]  # fmt: skip
    [row] = table.to_dict("records")
    assert row["wafer"] == "wse3" and (row["fitted_runs"], row["judged_runs"], row["inside_band"]) == (7, 2, 1)
    assert row["worst"] == pytest.approx(2.0) and row["median_ratio"] == pytest.approx(1.0)
    assert row["error"] == pytest.approx(2.0)  # the geometric mean of 2 and 1/0.5


def test_the_batch_sweep_sets_measured_streaming_and_a_resident_pipeline_side_by_side(measured: list) -> None:
    modes = validation.mode_table(measured)
    bert = sorted(
        (
            (run.model.name, run.global_batch, run)
            for run in measured
            if run.model.family == "bert" and run.release is None  # the paper's sweep
        ),
        key=lambda entry: entry[:2],
    )
    assert [(row["model"], row["global_batch"]) for row in modes.to_dict("records")] == [e[:2] for e in bert]
    cal = fitted()
    for row, (name, batch, run) in zip(modes.to_dict("records"), bert, strict=True):
        assert row["measured_samples_per_s"] == run.measured_samples_per_s
        assert row["weight_streaming_samples_per_s"] == run.predict(cal)
        smallest = min(r.global_batch for r in measured if r.model.name == name and r.release is None)
        placed = pipelined(run.model.layers, run.wafer, batch=smallest, calibration=cal)
        assert row["pipelined_samples_per_s"] == pytest.approx(dataclasses.replace(placed, batch=batch).samples_per_s)
        assert row["fits_pipelined"] == fits_pipelined(run.model.layers, run.wafer)
    paper_bert = next(run for run in reversed(measured) if run.model.family == "bert" and run.release is None)
    gpt_only = [run for run in measured if run.model.family != "bert"][:2] + [paper_bert]
    assert list(validation.mode_table(gpt_only)["model"]) == [paper_bert.model.name]


def test_the_batch_sweep_says_whether_a_model_fits_the_wafer_its_run_was_on() -> None:
    """A BERT of width 2816 needs more fabric memory than a CS-2 has and less than a CS-3's: its CS-3 run fits."""
    frame = read_measured(measured_csv())
    row = frame[frame["model"] == "bert_large"].iloc[[0]].assign(d_model=2816, system="CS-3", release="")
    [run] = runs(row)
    assert not fits_pipelined(run.model.layers, "wse2")  # the case tells the wafers apart
    assert validation.mode_table([run])["fits_pipelined"].tolist() == [True]


def test_the_validation_scaling_table_is_samples_over_n_times_one_system() -> None:
    frame = validation.scaling_table()
    assert {(m, w) for m, w in zip(frame["model"], frame["wafer"], strict=True)} == {
        (m, w) for m in ("bert_large", "gpt3_xl", "gpt3_13b", "llama2_70b") for w in ("wse2", "wse3")
    }
    assert list(frame[(frame["model"] == "gpt3_xl") & (frame["wafer"] == "wse3")]["systems"]) == [
        1,
        2,
        4,
        16,
        64,
        256,
        1024,
        2048,
    ]
    layers = get_model("gpt3_xl").layers
    one_weak = weight_streaming(layers, "wse2", 1, 64).samples_per_s
    one_strong = weight_streaming(layers, "wse2", 1, 1024).samples_per_s
    rows = frame[(frame["model"] == "gpt3_xl") & (frame["wafer"] == "wse2")].set_index("systems")
    for n in (1, 16, 192):
        weak = weight_streaming(layers, "wse2", n, 64).samples_per_s
        assert rows.loc[n, "weak_batch_per_system"] == 64 and rows.loc[n, "strong_global_batch"] == 1024
        assert rows.loc[n, "weak_samples_per_s"] == pytest.approx(weak)
        assert rows.loc[n, "weak_efficiency"] == pytest.approx(weak / (n * one_weak))
    strong = weight_streaming(layers, "wse2", 16, 1024 // 16).samples_per_s
    assert rows.loc[16, "strong_samples_per_s"] == pytest.approx(strong)
    assert rows.loc[16, "strong_efficiency"] == pytest.approx(strong / (16 * one_strong))
    # a global batch that does not split evenly over the systems has no strong-scaling figure
    assert math.isnan(rows.loc[192, "strong_samples_per_s"]) and math.isnan(rows.loc[192, "strong_efficiency"])
    bert = frame[(frame["model"] == "bert_large") & (frame["wafer"] == "wse3")].set_index("systems")
    assert bert.loc[2048, "strong_samples_per_s"] > 0  # 8192 over 2048 systems: 4 each
    on_wse3 = frame[frame["wafer"] == "wse3"].set_index(["model", "systems"])
    assert math.isnan(on_wse3.loc[("gpt3_xl", 2048), "strong_efficiency"])  # fewer samples than systems
    assert on_wse3.loc[("llama2_70b", 2048), "strong_efficiency"] > 0  # one sample per system
    assert rows.loc[1, "strong_efficiency"] == pytest.approx(1.0) == rows.loc[1, "weak_efficiency"]


def test_one_system_of_each_generation_gives_the_ratio_of_their_presets() -> None:
    frame = validation.generation_table()
    assert list(zip(frame["model"], frame["batch"], strict=True)) == [
        ("bert_large", 1024),
        ("gpt2_small", 256),
        ("gpt3_xl", 128),
        ("gpt3_13b", 128),
    ]
    for row in frame.to_dict("records"):
        layers = get_model(row["model"]).layers
        wse2 = weight_streaming(layers, "wse2", 1, row["batch"]).samples_per_s
        wse3 = weight_streaming(layers, "wse3", 1, row["batch"]).samples_per_s
        assert (row["wse2_samples_per_s"], row["wse3_samples_per_s"]) == (pytest.approx(wse2), pytest.approx(wse3))
        assert row["wse3_over_wse2"] == pytest.approx(wse3 / wse2)


def test_the_public_statements_quote_the_tables_beside_them(validation_tables: dict[str, pd.DataFrame]) -> None:
    scaling, generations = validation_tables["scaling"], validation_tables["generations"]
    checks = validation_tables["public"]
    assert list(checks.columns) == ["statement", "model"]
    said = list(checks["model"])
    assert len(said) == 5
    xl = scaling[(scaling["model"] == "gpt3_xl") & (scaling["wafer"] == "wse2")].set_index("systems")
    assert said[0] == (
        f"GPT-3 XL, 64 sequences per system: efficiency {xl.loc[192, 'weak_efficiency']:.3f} at 192 systems, "
        f"{xl.loc[16, 'weak_efficiency']:.3f} at 16"
    )
    assert (
        said[1] == f"GPT-3 XL, global batch 1024 on 2 systems: {xl.loc[2, 'strong_efficiency']:.3f} of twice one system"
    )
    assert said[2] == "one system: " + ", ".join(
        f"{row['model']} {row['wse3_over_wse2']:.2f}x" for row in generations.to_dict("records")
    )
    model = get_model("gpt3_13b")
    mfu = weight_streaming(model.layers, "wse2", 1, 128).samples_per_s * model.flops_per_sample / 7.5e15
    assert said[3] == f"GPT-3 13B, batch 128: model FLOPs {mfu:.3f} of 7.5 PFLOP/s"
    assert "the CS-2's 7.5 PFLOP/s" in checks["statement"][3]
    days = float(re.match(r"(\d+\.\d) days for the seven at 16 systems, batch 1024", said[4])[1])
    assert days == pytest.approx(round(validation._cerebras_gpt_days(16), 1))


def test_the_seven_cerebras_gpt_models_take_their_tokens_over_the_modeled_rate() -> None:
    """Days = sum over the seven of 20 tokens per parameter / 2,048 tokens per sample / samples per s."""

    total_s = 0.0
    for layers, width, heads, params in validation.CEREBRAS_GPT.values():
        model = model_from_config(
            {"model_type": "gpt2", "n_layer": layers, "n_embd": width, "n_head": heads, "vocab_size": 50257}
            | {"n_positions": 2048}
        )
        assert model.params == pytest.approx(params, rel=0.15)  # the shapes are the published models'
        total_s += 20 * params / 2048 / weight_streaming(model.layers, "wse2", 4, 1024 // 4).samples_per_s
    assert validation._cerebras_gpt_days(4) == pytest.approx(total_s / 86400, rel=1e-12)
    # on one system the whole global batch of 1,024 sequences runs on it (the default batch)
    one_system_s = 0.0
    for layers, width, heads, params in validation.CEREBRAS_GPT.values():
        model = model_from_config(
            {"model_type": "gpt2", "n_layer": layers, "n_embd": width, "n_head": heads, "vocab_size": 50257}
            | {"n_positions": 2048}
        )
        one_system_s += 20 * params / 2048 / weight_streaming(model.layers, "wse2", 1, 1024).samples_per_s
    assert validation._cerebras_gpt_days(1) == pytest.approx(one_system_s / 86400, rel=1e-12)
    assert validation._cerebras_gpt_days(16, global_batch=512) < validation._cerebras_gpt_days(4, global_batch=512)


# --- the numbers the validation prose quotes ----------------------------------------------------------


def test_the_fit_summary_is_the_error_of_each_set_of_ratios() -> None:
    table = pd.DataFrame(
        {
            "id": ["g1", "g2", "b1", "b2", "j1", "j2"],
            "use": ["fit", "fit", "fit", "fit", "judge", "judge"],
            "model": ["gpt3_xl", "gpt3_13b", "bert_base", "bert_large", "gpt2", "bert_large"],
            "ratio": [1.1, 1 / 1.3, 1.0, 2.0, 1.2, 3.0],
            "inside_band": [True, True, True, False, True, False],
            "peak_model_ratio": [3.0, 4.0, 5.0, 1 / 6.0, 9.0, 9.0],
        }
    )
    summary = validation.fit_summary(table, np.log([1.5, 1.0, 1.0, 1.0]))
    assert (summary["runs"], summary["judged"]) == (4, 2)
    assert summary["error"] == pytest.approx((1.1 * 1.3 * 1.0 * 2.0) ** 0.25)
    assert (summary["worst"], summary["worst_run"]) == (pytest.approx(2.0), "b2")
    assert summary["refit_error"] == pytest.approx(1.5**0.25)
    assert summary["uncalibrated_error"] == pytest.approx((3 * 4 * 5 * 6) ** 0.25)
    assert summary["uncalibrated_worst"] == pytest.approx(6.0)
    assert summary["gpt_error"] == pytest.approx((1.1 * 1.3) ** 0.5)
    assert summary["bert_error"] == pytest.approx(2.0**0.5)
    assert (summary["judged_error"], summary["judged_worst"]) == (pytest.approx((1.2 * 3.0) ** 0.5), pytest.approx(3.0))
    assert summary["judged_inside_band"] == 1
    assert "family_out_error" not in summary
    held = [1 / 4.0, 1.0, 2.0, 1.0, math.nan, math.nan]
    with_held = validation.fit_summary(table.assign(family_out_ratio=held), np.zeros(4))
    assert with_held["family_out_error"] == pytest.approx(8.0**0.25)
    assert with_held["family_out_worst"] == pytest.approx(4.0)
    assert with_held["refit_error"] == 1.0


def test_the_batch_rise_is_the_largest_batch_over_the_smallest() -> None:
    modes = pd.DataFrame(
        {
            "model": ["a", "b", "a", "a", "b"],
            "global_batch": [512, 8, 128, 2048, 64],
            "measured_samples_per_s": [20.0, 1.0, 10.0, 70.0, 3.0],
            "weight_streaming_samples_per_s": [2.0, 1.0, 1.0, 8.0, 5.0],
            "pipelined_samples_per_s": [1.0, 2.0, 1.0, 1.5, 3.0],
        }
    )
    rise = validation.batch_rise(modes)
    assert list(rise.index) == ["a", "b"]
    assert rise.loc["a"].to_dict() == {"measured": 7.0, "streaming": 8.0, "pipelined": 1.5}
    assert rise.loc["b"].to_dict() == {"measured": 3.0, "streaming": 5.0, "pipelined": 1.5}


def test_the_data_figures_come_from_the_measured_runs(measured: list) -> None:
    figures = validation.data_figures(measured)
    rows = pd.read_csv(measured_csv())
    rows = rows[rows["release"].isna()]  # the paper's runs, which the prose describes
    bert_base = rows[rows["model"] == "bert_base"].set_index("global_batch")["samples_per_s"]
    assert figures["bert_base_rise_128_to_2048"] == pytest.approx(16189.9 / 2267.7)
    assert (figures["bert_base_peak_batch"], figures["bert_base_peak_samples_per_s"]) == (2048, bert_base.max())
    assert (figures["bert_base_last_batch"], figures["bert_base_last_samples_per_s"]) == (16384, 12135.1)
    assert figures["gpt_max_tokens_per_s"] == pytest.approx(373.40 * 2048)
    assert (figures["smallest_gpt"], figures["largest_gpt"]) == ("gpt3_256M", "gpt3_20B")
    for name in ("smallest_gpt", "largest_gpt"):
        (run,) = [r for r in measured if r.model.name == figures[name]][:1]
        core = sum(layer.attention_core_forward_flops for layer in run.model.layers)
        total = sum(layer.forward_flops for layer in run.model.layers)
        assert figures[f"{name}_attention_share"] == pytest.approx(core / total)
    assert (
        0.19 < figures["smallest_gpt_attention_share"] < 0.21 and 0.045 < figures["largest_gpt_attention_share"] < 0.055
    )


def test_the_tables_are_named_by_what_they_hold_and_count_tokens_and_hardware_figures() -> None:
    """performance_tables() called directly (the module's fixture computes it once, for every test): each table
    under its name; tokens_per_s is samples/s times the sequence length, and an image or MLP model, which has no
    sequence, counts one token per sample; the hardware table lists each figure, its value and its source."""
    tables = performance.performance_tables()
    assert list(tables) == ["throughput", "scaling", "kernels", "streaming_layers", "published", "hardware"]
    assert tables["hardware"].equals(performance.hardware_table())
    assert tables["streaming_layers"].equals(performance.streaming_layer_table())
    throughput = tables["throughput"]
    for name, rows in throughput.groupby("model"):
        tokens = get_model(str(name)).seq_len or 1
        assert rows["tokens_per_s"].tolist() == pytest.approx((rows["samples_per_s"] * tokens).tolist())
    assert {"fc_mnist", "resnet50"} <= set(throughput["model"])
    figures = tables["hardware"]
    assert list(figures.columns)[:2] == ["wafer", "figure"] and {"value", "source"} <= set(figures.columns)
    assert not figures[["wafer", "figure", "value", "source"]].isna().any().any()
    memoryx = figures[figures["wafer"] == "MemoryX"].set_index("figure")
    assert memoryx.loc["max_parameters", "value"] == hardware.MEMORYX.max_parameters


def test_the_per_layer_table_is_by_default_the_one_the_page_heads_gpt3_xl_on_16_cs2() -> None:
    """The heading "Weight streaming, per layer (GPT-3 XL, 16 CS-2)" describes streaming_layer_table()'s defaults."""
    streamed = plan("gpt3_xl", "wse2", systems=16, batch=16 * performance.batch_per_system("gpt3_xl")).streaming
    layers = performance.streaming_layer_table()
    assert layers["layer"].tolist() == [layer.name for layer in streamed.layers]
    assert layers["latency_ms"].tolist() == pytest.approx([1e3 * layer.latency_s for layer in streamed.layers])


# --- the same checks on tables computed inside one test ----------------------------------------------
# The module fixtures above compute the tables once, inside whichever test runs first; mutmut maps a
# function to the tests that call it, so the other tests would never be run against its mutants. These
# two tests compute the tables themselves and run every check that reads the fixtures.


def test_every_performance_page_check_on_tables_computed_here() -> None:
    perf_tables = performance.performance_tables()
    perf_page = _perf_page(perf_tables)
    test_the_performance_page_shows_its_tables_from_the_csv_frames(perf_tables, perf_page)
    test_the_performance_page_s_prose_quotes_the_calibration_and_the_presets(perf_page)
    test_a_model_too_large_to_pipeline_is_quoted_with_the_planner_s_refusal(perf_tables)
    test_every_zoo_model_on_every_wafer_pipelined_where_it_fits_and_streamed_on_each_cluster_size(perf_tables)
    for row in THROUGHPUT_ROWS:
        test_a_throughput_row_is_the_plan_of_its_model_wafer_mode_and_cluster(perf_tables, *row)
    test_weak_and_strong_scaling_are_samples_over_n_times_one_system(perf_tables)
    test_the_kernel_and_streamed_layer_tables_hold_the_plans_figures_in_their_units(perf_tables)
    test_every_hardware_figure_is_listed_with_its_source(perf_tables)
    test_the_published_figures_are_modeled_published_and_their_ratio(perf_tables)


def test_every_validation_page_check_on_tables_computed_here() -> None:
    measured = runs(read_measured(measured_csv()))
    validation_tables = _validation_tables(measured)
    validation_page = _validation_page(validation_tables, measured)
    test_the_validation_page_shows_its_tables_from_the_csv_frames(validation_tables, validation_page)
    test_the_validation_summary_quotes_the_errors_of_the_runs_table(validation_tables, validation_page)
    test_the_validation_prose_quotes_the_measured_runs(validation_page)
    test_the_validation_prose_quotes_the_batch_sweep(validation_tables, validation_page)
    test_the_parameter_table_is_the_calibration_record(validation_tables)
    test_the_public_statements_quote_the_tables_beside_them(validation_tables)
    test_the_data_figures_come_from_the_measured_runs(measured)


def test_the_public_statements_are_quoted_with_their_sources() -> None:
    """The statements column quotes each public statement and names where it was said."""
    checks = validation.public_checks(validation.scaling_table(), validation.generation_table())
    assert checks["statement"].tolist() == [
        "'near-perfect linear scaling' to 192 CS-2 (appliance-mode-blog#Introduction)",
        "'from one CS-2 to two, the time to train is cut in half' (Cerebras glossary, Wafer-Scale Cluster)",
        "the WSE-3 'delivers twice the performance' of the WSE-2 (Cerebras, 2024-03)",
        "large GPT models reach about a quarter of the CS-2's 7.5 PFLOP/s (measured, calibration README)",
        "all seven Cerebras-GPT models (111M to 13B, 20 tokens per parameter) trained on Andromeda's 16 CS-2 "
        "'in just a few weeks' (Cerebras, 2023-03)",
    ]
    assert (
        checks["model"]
        .iloc[4]
        .endswith(
            "days for the seven at 16 systems, batch 1024 (an older software release than the calibration runs' may "
            "have been slower)"
        )
    )


def test_the_validation_tables_cross_validate_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = runs(read_measured(measured_csv()))
    calls = []

    def nothing_held_out(data: list) -> GroupedValidation:
        calls.append(len(data))
        return GroupedValidation((), {}, {})

    monkeypatch.setattr(validation, "grouped_cross_validation", nothing_held_out)
    fitted_count = len(fitted_runs(measured))
    assert "family_out_ratio" in validation.validation_tables(measured)["runs"].columns and calls == [fitted_count]
    assert "family_out_ratio" not in validation.validation_tables(measured, cross_validate=False)["runs"].columns
    assert calls == [fitted_count]


# --- grouped residuals, the band's coverage and the release generations ---------------------------------


def _record_with(groupings: dict, classes: dict, releases: dict | None = None) -> dict:
    return {"band": {"groupings": groupings, "classes": classes}, "release_generations": releases or {}}


def test_the_group_table_lists_every_group_the_record_left_out() -> None:
    groupings = {
        "family": {
            "groups": {"bert": {"runs": 3, "error": 1.2, "worst": 1.5}, "gpt2": {"runs": 2, "error": 1.1, "worst": 1.3}}
        },
        "release": {"groups": {"2.0": {"runs": 1, "error": 1.05, "worst": 1.05}}, "not_fitted": {"1.7": "too few"}},
    }
    table = validation.group_table(_record_with(groupings, {}))
    assert table.values.tolist() == [
        ["family", "bert", 3, 1.2, 1.5],
        ["family", "gpt2", 2, 1.1, 1.3],
        ["release", "2.0", 1, 1.05, 1.05],
    ]
    assert validation.group_table(calibration_record())["runs"].sum() > 0


def test_the_band_table_counts_the_held_out_and_judged_predictions_inside_each_band() -> None:
    runs_table = pd.DataFrame(
        {
            "band_class": ["weight_streaming/decoder"] * 5 + ["weight_streaming/encoder"],
            "use": ["fit", "fit", "judge", "judge", "judge", "fit"],
            "ratio": [1.0, 1.0, 1.4, 2.0, 1.5, 1.0],
            "family_out_ratio": [1.1, 1.6, math.nan, math.nan, math.nan, 0.45],
            "source_out_ratio": [0.7, math.nan, math.nan, math.nan, math.nan, 1.9],
            "release_out_ratio": [1.5, 1.49, math.nan, math.nan, math.nan, math.nan],
            # as validation_table says: the judged x2.0 run is on a wafer whose slow side is widened
            "inside_band": [True, False, True, True, True, True],
        }
    )
    classes = {
        "weight_streaming/decoder": {"factor": 1.5, "from": "this class"},
        "weight_streaming/encoder": {"factor": 2.0, "from": "every run"},
    }
    table = validation.band_table(runs_table, _record_with({}, classes)).set_index("class")
    decoder, encoder = table.loc["weight_streaming/decoder"], table.loc["weight_streaming/encoder"]
    # decoder held out: 1.1, 0.7, 1.5 (first run), 1.6, 1.49 (second): inside x/ 1.5 are 1.1, 0.7, 1.5 and 1.49
    assert (decoder["held_out_predictions"], decoder["held_out_inside"]) == (5, 4)
    # judged: 1.4, 2.0 (inside its widened band) and 1.5 (on the band's edge): each as its row says
    assert (decoder["judged_runs"], decoder["judged_inside"]) == (3, 3)
    assert (encoder["held_out_predictions"], encoder["held_out_inside"]) == (2, 1) and encoder["judged_runs"] == 0
    assert encoder["taken_from"] == "every run" and encoder["factor"] == 2.0


def test_a_record_without_release_generations_has_an_empty_release_table() -> None:
    """A calibration record from before release generations were recorded has none to list."""
    table = validation.release_table({"band": {"groupings": {}, "classes": {}}})
    assert table.empty and list(table.columns) == ["release", "weight_streaming_runs", "figure", "planned_with"]


def test_the_release_table_says_which_generations_have_a_figure_and_what_a_plan_uses() -> None:
    table = validation.release_table(calibration_record()).set_index("release")
    cal = fitted()
    for label, row in table.iterrows():
        release = str(label).removesuffix(".x")  # a generation, 2.0.x: every 2.0 release
        own = release in cal.release_efficiency
        assert (row["figure"] == "fitted") is own
        assert own is (row["weight_streaming_runs"] >= 2)
        assert row["planned_with"] == pytest.approx(cal.compute_scale("weight_streaming", str(release)))
