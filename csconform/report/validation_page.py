"""The performance model against measured runs: ``performance_validation.md``, its CSV tables and figures.

The tables and every number the prose quotes come from :mod:`csconform.report.validation` (pure
functions, checked number by number against the page in tests/unit/report/test_performance_pages.py);
this module lays them out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from csconform.output_guard import write_csv, write_text  # noqa: E402
from csconform.perf import hardware  # noqa: E402
from csconform.perf.calibration.band import widened_wafers  # noqa: E402
from csconform.perf.calibration.fit import fit, fitted_runs  # noqa: E402
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, runs  # noqa: E402
from csconform.perf.execution.efficiency import calibration_record, fitted  # noqa: E402
from csconform.perf.figures import write_figure  # noqa: E402
from csconform.report.validation import (  # noqa: E402
    SCALING_MODELS,
    batch_rise,
    data_figures,
    fit_summary,
    page_scaling,
    validation_tables,
)

BAND = 1.25  # the +-25 % band of the parity plot
MODELED_LINES = {  # the batch figure's lines of the model, one per execution mode: column -> (style, mode)
    "weight_streaming_samples_per_s": ("x--", "weight streaming"),
    "pipelined_samples_per_s": (":", "pipelined"),
}
CSV_NAMES = {  # table -> the CSV that holds it whole
    "runs": "performance_validation.csv",
    "groups": "performance_validation_groups.csv",
    "bands": "performance_validation_bands.csv",
    "judged": "performance_validation_judged.csv",
    "releases": "performance_validation_releases.csv",
    "parameters": "performance_validation_parameters.csv",
    "modes": "performance_validation_modes.csv",
    "scaling": "performance_validation_scaling.csv",
    "generations": "performance_validation_generations.csv",
    "public": "performance_validation_public.csv",
}


# --- figures ----------------------------------------------------------------------------------------


def _parity_figure(frame: pd.DataFrame, out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(5.5, 5.5))
    low = 0.5 * min(frame["measured_samples_per_s"].min(), frame["predicted_samples_per_s"].min())
    high = 2.0 * max(frame["measured_samples_per_s"].max(), frame["predicted_samples_per_s"].max())
    line = np.array([low, high])
    axes.fill_between(line, line / BAND, line * BAND, color="0.9", label="+-25 %")
    axes.plot(line, line, color="black", linewidth=0.8, label="y = x")
    for family, marker in (("gpt", "o"), ("bert", "s"), ("llama", "^")):
        part = frame[frame["model"].str.startswith(family)]
        fitted_part, judged = part[part["use"] == "fit"], part[part["use"] == "judge"]
        # (runs, their predicted samples/s, how they are drawn); empty groups of runs are not drawn
        groups: list[tuple[pd.DataFrame, pd.Series, dict[str, Any]]] = [
            (fitted_part, fitted_part["predicted_samples_per_s"], {"s": 28, "label": f"{family}: fitted", "zorder": 3}),
            (
                judged,
                judged["predicted_samples_per_s"],
                {
                    "s": 60,
                    "facecolors": "none",
                    "edgecolors": "tab:red",
                    "label": f"{family}: never fitted (judge)",
                    "zorder": 3,
                },
            ),
        ]
        if "family_out_ratio" in part:
            held = part.dropna(subset=["family_out_ratio"])
            style: dict[str, Any] = {"s": 14, "color": "0.5", "label": f"{family}: fit without its family", "zorder": 2}
            groups.append((held, held["measured_samples_per_s"] * held["family_out_ratio"], style))
        for drawn, predicted, style in groups:
            if len(drawn):
                axes.scatter(drawn["measured_samples_per_s"], predicted, marker=marker, **style)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_ylim(low, high)
    axes.set_xlabel("measured samples/s (CS-2 and CS-3, one or two systems)")
    axes.set_ylabel("predicted samples/s")
    axes.set_title(f"Calibrated model against {len(frame)} measured runs", fontsize=9)
    axes.legend(fontsize=7, loc="upper left")
    return write_figure(figure, out)


def _batch_figure(modes: pd.DataFrame, out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, group in modes.groupby("model", sort=False):
        (line,) = axes.plot(group["global_batch"], group["measured_samples_per_s"], "o-", label=f"{name} measured")
        for column, (style, mode) in MODELED_LINES.items():
            axes.plot(
                group["global_batch"], group[column], style, color=line.get_color(), label=f"{name} {mode} (model)"
            )
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("global batch (sequences of 128 tokens)")
    axes.set_ylabel("samples/s (one CS-2)")
    axes.set_title("BERT fine-tuning: the measured rise with batch is weight streaming's", fontsize=9)
    axes.legend(fontsize=6)
    return write_figure(figure, out)


def _scaling_figure(scaling: pd.DataFrame, out: Path) -> Path:
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    colours = dict(zip(SCALING_MODELS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))
    for (name, wafer), group in scaling.groupby(["model", "wafer"], sort=False):
        style = dict(color=colours[name], linestyle="-" if wafer == "wse2" else "--", marker="o", markersize=3)
        left.plot(group["systems"], group["weak_samples_per_s"], label=f"{name} {wafer}", **style)
        right.plot(group["systems"], group["strong_efficiency"], label=f"{name} {wafer}", **style)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("systems")
    left.set_ylabel("samples/s, fixed batch per system")
    right.set_xscale("log", base=2)
    right.set_ylim(0, 1.05)
    right.set_xlabel("systems")
    right.set_ylabel("strong-scaling efficiency (fixed global batch)")
    left.legend(fontsize=6)
    figure.suptitle("Calibrated weight streaming on CS-2 (solid) and CS-3 (dashed) clusters", fontsize=9)
    return write_figure(figure, out)


# --- the page ---------------------------------------------------------------------------------------


def markdown_table(frame: pd.DataFrame) -> str:
    """A table as the performance pages print it: no index, four significant figures."""
    return frame.to_markdown(index=False, floatfmt=".4g")


def table_section(title: str, frame: pd.DataFrame) -> list[str]:
    """The lines of a page section that is one table: its heading, then the table."""
    return [f"## {title}", "", markdown_table(frame), ""]


def _summary_lines(summary: dict[str, Any], record: dict[str, Any]) -> list[str]:
    band = record["band"]
    lines = [
        f"- stored fit, on the {summary['runs']} runs it fitted: error **{summary['error']:.3f}**, worst run "
        f"{summary['worst']:.3f} ({summary['worst_run']})",
    ]
    for grouping in ("family", "source", "release"):
        if f"{grouping}_out_error" in summary:
            lines.append(
                f"- each run predicted by the fit without its {grouping}: error "
                f"**{summary[f'{grouping}_out_error']:.3f}**, worst run {summary[f'{grouping}_out_worst']:.3f}"
            )
    lines.append(
        f"- the band plans state: {100 * band['coverage']:.0f} % of those held-out predictions lie within "
        f"x/ {band['factor']:.3g} (per mode and model class: "
        + ", ".join(f"{key} x/ {entry['factor']:.3g}" for key, entry in band["classes"].items())
        + ")"
    )
    for wafer, widening in widened_wafers(band).items():
        preset = hardware.get_wafer(wafer)
        lines.append(
            f"- on a {preset.system} (the calibration fits {band['fitted_runs_by_wafer'][wafer]} run(s) on it) the "
            f"band's slow side widens x{widening:.3g}: its dense peak is an estimate the public facts allow to be "
            "that many times too high"
        )
    if summary["judged"]:
        lines.append(
            f"- the {summary['judged']} runs kept to judge (never fitted): error **{summary['judged_error']:.3f}**, "
            f"worst run {summary['judged_worst']:.3f}, {summary['judged_inside_band']} of {summary['judged']} "
            "inside the band stated for them"
        )
    return [
        *lines,
        f"- refitting now gives error {summary['refit_error']:.3f} (the stored figures are rounded to 4 digits)",
        f"- the uncalibrated model (peak compute, no latency, unlimited input) is off by "
        f"{summary['uncalibrated_error']:.2f} on average and up to {summary['uncalibrated_worst']:.1f}x",
        f"- GPT runs alone: error {summary['gpt_error']:.3f}; BERT runs alone: {summary['bert_error']:.3f}",
    ]


def validation_markdown(
    tables: dict[str, pd.DataFrame], record: dict[str, Any], summary: dict[str, Any], measured: dict[str, Any]
) -> str:
    """The page: ``tables`` (:func:`~csconform.report.validation.validation_tables`), the calibration
    ``record`` the model uses, the errors of :func:`~csconform.report.validation.fit_summary` and the
    measured runs' own figures (:func:`~csconform.report.validation.data_figures`)."""
    runs_count = summary["runs"]
    rise = batch_rise(tables["modes"])
    link_tbps = hardware.get_wafer("wse2").system_io_bytes_per_s * 8 / 1e12
    lines = [
        "# Performance model against measured runs",
        "",
        f"The performance model (`csconform.perf`) predicts the {runs_count} published training runs of the "
        f"calibration set ({record['data']['source']}; `csconform/perf/measured/`) from the hardware presets, "
        "the models' shapes and a few fitted figures, and is judged on the runs of the set it never fitted and "
        "on fits that left out whole groups (model family, source, release). "
        "Error = exp(mean |log(predicted / measured)|), the geometric mean of the ratio taken both ways. "
        "Regenerate with `csconform report --skip "
        "conformance,placement,benchmarks`; refit with `csconform calibrate --write-shipped`; score other "
        "measured runs (same CSV columns) with `csconform calibrate --evaluate RUNS.csv`.",
        "",
        *_summary_lines(summary, record),
        "",
        "![parity](figures/performance_validation_parity.png)",
        "",
        "## What makes real runs slower than the peak: the fitted figures",
        "",
        f"Fitted {record['fitted_on']} with scipy's least squares on log throughput ({record['method']}); the "
        "file `csconform/perf/calibration/calibration.json` keeps the values, the date and the sha256 of the data. "
        "Relative standard errors come from the fit's Jacobian; the range is over the fits of the grouped "
        "cross-validation. No system figure belongs to a model or a run: the same ones serve every model, batch, "
        "cluster and wafer, and wafer generations differ only in their presets (cores, clock, SIMD width, memory, "
        "I/O). A release generation's figure is fitted only where two weight-streaming runs of that release or "
        "more determine it (one run would fix the figure to reproduce itself exactly and say nothing of the "
        "release); any other release takes the next later fitted one's, or the reference's "
        "(see the releases table below).",
        "",
        markdown_table(tables["parameters"]),
        "",
        "- **matmul_efficiency** and **attention_efficiency**: compute time is FLOPs / (efficiency x peak). "
        "The attention core (Q K^T, softmax, x V: no weights, per-head matrices of width 64-128) runs at less "
        "than half the rate of the weight kernels; it is what lowers the measured FLOP rate of the small GPT "
        "models, whose attention is a larger share at 2,048 tokens "
        f"({measured['smallest_gpt_attention_share']:.0%} of the forward FLOPs in {measured['smallest_gpt']}, "
        f"{measured['largest_gpt_attention_share']:.0%} in {measured['largest_gpt']}). "
        "A dependence on the width d_model (tile shape against the SIMD width) was tried and the fit drove it "
        "to zero: these data show none beyond attention's share.",
        "- **layer_latency_s**: each weight layer costs a fixed time per pass that compute does not hide "
        "(the wafer switching to the next streamed layer). At small batches it dominates: it is why BERT-Base's "
        f"measured throughput rises {measured['bert_base_rise_128_to_2048']:.1f}-fold from batch 128 to 2,048 and "
        "then levels off. It is paid once per micro-batch.",
        "- **micro_batch_tokens**: the tokens one system's lanes hold at once (the compiler logs of the measured "
        "runs name a per-system micro-batch and a number of lanes); a larger shard runs as several micro-batches, "
        "each streaming the weights and paying the latencies again, so throughput is flat in the batch once the "
        "lanes are full, which is why the GPT runs give the same rate at batch 128 and 256. "
        f"Weight traffic at the system's {link_tbps:g} Tb/s is modeled "
        "too but is hidden behind compute in every calibration run.",
        "- **input_tokens_per_s**: one system's input workers (appliance-mode-blog: the worker nodes stream the "
        "training data) deliver at most this many tokens per second; it caps BERT-Base from batch "
        f"{measured['bert_base_peak_batch']:,} on (the measured rate even falls a little, "
        f"{measured['bert_base_peak_samples_per_s']:,.0f} to {measured['bert_base_last_samples_per_s']:,.0f} "
        f"samples/s at batch {measured['bert_base_last_batch']:,}, which the model does not reproduce: "
        "its worst runs) and never binds the GPT runs (at most "
        f"{measured['gpt_max_tokens_per_s'] / 1e6:.2f}M tokens/s measured).",
        "",
        "## Which execution mode the runs used",
        "",
        "The paper does not say (three ALCF BERT-Large logs of releases 1.7.1 and 1.8.0 do: pipelined, "
        "predicted with pipelined_efficiency). The documents put models below about a billion parameters in "
        "pipelined mode "
        "(pipelined-execution, appliance-mode-blog; public-facts#Hardware), which would cover BERT and the "
        "256M and 590M GPT models. The data say weight "
        "streaming for all the paper's runs: (1) the 256M and 590M GPT runs lie on the same curve as the 2.7B-20B "
        "runs, and like them give the same rate at batch 128 and 256; (2) BERT's throughput rises "
        + ", ".join(f"{m} {r.measured:.1f}x" for m, r in rise.iterrows())
        + " from its smallest to its largest batch; a resident pipeline only fills and drains once per batch "
        "(a few dozen kernel times), so with the same efficiencies it predicts "
        + ", ".join(f"{m} {r.pipelined:.2f}x" for m, r in rise.iterrows())
        + " and is far above the measured rate at small batches, while weight streaming predicts "
        + ", ".join(f"{m} {r.streaming:.1f}x" for m, r in rise.iterrows())
        + ". So the validation plans every run in weight streaming (a measured run that states its mode is "
        "planned in that mode), and so does `csconform plan` without `--mode` on a WSE-2 or WSE-3 (PERF-031); "
        "pipelined mode stays available on request for a model that fits, and its plan's notes give the "
        "weight-streaming figure beside it.",
        "",
        markdown_table(tables["modes"]),
        "",
        "![BERT batch sweep](figures/performance_validation_bert_batch.png)",
        "",
        "## Every run",
        "",
        "`ratio` = predicted / measured with the stored fit; `family_out_ratio`, `source_out_ratio` and "
        "`release_out_ratio` with the fit that left out the run's model family, source or release (empty for a "
        "judging run, never fitted, and for a group no fit could leave out); `band` is the band a plan states for "
        "the run's mode and model class and `band_slower` its slow side (wider on a wafer the calibration barely "
        "fits whose dense peak is an estimate); "
        "`peak_model_ratio` with the uncalibrated figures.",
        "",
        markdown_table(tables["runs"]),
        "",
        "## Grouped cross-validation and the band",
        "",
        "Each group of each grouping left out in turn and its runs predicted by the fit on the rest: the "
        "residuals by model family, source, release generation and configuration (from the calibration record). "
        "A group no fit could leave out (too few runs outside it for the figures they inform) has no row.",
        "",
        markdown_table(tables["groups"]),
        "",
        "The band a plan states for its mode and model class, and the predictions it covers: the held-out "
        "predictions of the fitted runs of the class (by the fits without their family, source or release) and "
        "the runs kept to judge, which no fit saw.",
        "",
        markdown_table(tables["bands"]),
        "",
        "The runs kept to judge by wafer generation (`median_ratio` above 1: the model predicts them too fast). "
        "A generation with few fitted runs is planned through its presets (the WSE-3's dense 16-bit peak is an "
        "estimate: see the generations table below), and the band, taken from the fitted runs, does not "
        "measure that extrapolation: on such a wafer its slow side widens by the range the public facts leave "
        "the estimated peak, a figure of the preset, not of these runs (the widening was added after the "
        "CS-3 runs here were seen, so their coverage does not test it independently).",
        "",
        markdown_table(tables["judged"]),
        "",
        "The release generations of the fitted runs: a generation has a figure of its own only where two "
        "weight-streaming runs or more determine it; `planned_with` is the share of the reference efficiencies "
        "a plan of that release uses.",
        "",
        markdown_table(tables["releases"]),
        "",
        "## Clusters and wafer generations",
        "",
        "The fitted runs are on one or two CS-2 and one CS-3; beyond them the model extrapolates through physics "
        "only: "
        f"data-parallel shards, the weights broadcast to every system over its own {link_tbps:g} Tb/s link, SwarmX "
        "adding the gradients at line rate with a latency of ceil(log2 N) hops, the per-layer latency paid by "
        "every system in parallel, and the presets of each wafer. With a fixed batch per system (weak scaling) "
        "the efficiency stays near 1; with a fixed global batch (strong scaling) the shards shrink until the "
        "per-layer latency and the weight traffic dominate.",
        "",
        markdown_table(page_scaling(tables["scaling"])),
        "",
        f"(every size in `{CSV_NAMES['scaling']}`)",
        "",
        "![scaling](figures/performance_validation_scaling.png)",
        "",
        markdown_table(tables["generations"]),
        "",
        *table_section("Against public statements", tables["public"]),
        "## Not modeled",
        "",
        "- The software release beyond a fitted efficiency per release generation that two runs or more "
        "determine (the paper's runs state none: they are the reference) and the documented changes of 1.9.0 "
        "(batch per system before it, pipelined mode deprecated): `plan --release`.",
        "- The traffic of activation checkpoints offloaded off the wafer when a large shard does not fit, "
        "MemoryX's optimizer throughput, and the host-side data pipeline beyond one token rate.",
        "- Pipelined mode is predicted with the weight-streaming efficiencies times pipelined_efficiency, fitted on "
        "BERT-Large runs only: no other pipelined model was measured in public.",
        "- A wafer generation's own efficiency or latency: the fit holds one CS-3 run, so a CS-3 differs from a "
        "CS-2 only by its presets; the CS-3 runs kept to judge are all slower than that predicts (the table of "
        "judged runs by wafer above), and the record cannot tell the CS-3 from release 2.10, which five of the six "
        "ran.",
        "",
    ]
    return "\n".join(lines)


def write_validation_report(out_dir: Path, cross_validate: bool = True) -> list[Path]:
    """Write performance_validation.md, its CSV tables and figures; return the paths written."""
    out_dir = Path(out_dir)
    figures = out_dir / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    data = runs(read_measured(measured_csv()))
    tables = validation_tables(data, cross_validate)
    refit = fit(fitted_runs(data), fitted())  # the stored values are this fit's, rounded
    written: list[Path] = []
    for name, frame in tables.items():
        path = out_dir / CSV_NAMES[name]
        write_csv(frame, path, index=False)
        written.append(path)
    written.append(_parity_figure(tables["runs"], figures / "performance_validation_parity.png"))
    written.append(_batch_figure(tables["modes"], figures / "performance_validation_bert_batch.png"))
    written.append(_scaling_figure(tables["scaling"], figures / "performance_validation_scaling.png"))
    markdown = out_dir / "performance_validation.md"
    page = validation_markdown(
        tables, calibration_record(), fit_summary(tables["runs"], refit.log_ratios), data_figures(data)
    )
    write_text(markdown, page, encoding="utf-8")
    written.append(markdown)
    return written
