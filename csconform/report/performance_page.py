"""The performance page, ``performance.md``: its CSV tables, its prose and its figures (throughput,
scaling, kernel breakdown, placement map, pipeline timeline, weight-streaming occupancy); then the
model against measured runs (:mod:`csconform.report.validation_page`, ``performance_validation.md``).

The tables and every number the prose quotes come from :mod:`csconform.report.performance` (pure
functions, checked number by number against the page in tests/unit/report/test_performance_pages.py);
this module lays them out. Markdown and CSV go to the report folder, PNG files to ``figures/`` inside it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from csconform.output_guard import write_csv, write_text  # noqa: E402
from csconform.perf import hardware  # noqa: E402
from csconform.perf.execution.efficiency import calibration_record  # noqa: E402
from csconform.perf.figures import pipeline_timeline, wafer_map, write_figure  # noqa: E402
from csconform.perf.models.zoo import get_model  # noqa: E402
from csconform.perf.plan import plan  # noqa: E402
from csconform.report.performance import (  # noqa: E402
    PAGE_KERNELS,
    STRONG_GLOBAL_BATCH,
    TOKENS_PER_SYSTEM,
    batch_per_system,
    page_tables,
    performance_tables,
    pipelined_refusal,
)
from csconform.report.validation_page import markdown_table, table_section, write_validation_report  # noqa: E402

# --- figures ----------------------------------------------------------------------------------------


def _throughput_figure(frame: pd.DataFrame, out: Path) -> Path:
    single = frame[frame["systems"] == 1]
    labels = [f"{m}\n{mode[:8]}" for m, mode in zip(single["model"], single["mode"], strict=True)]
    figure, axes = plt.subplots(figsize=(12, 4))
    colours = {"wse1": "tab:gray", "wse2": "tab:blue", "wse3": "tab:green"}
    positions = range(len(single))
    axes.bar(positions, single["samples_per_s"], color=[colours[w] for w in single["wafer"]])
    axes.set_yscale("log")
    axes.set_xticks(list(positions), labels, rotation=90, fontsize=6)
    axes.set_ylabel("samples/s (one system)")
    axes.set_title("Modeled throughput by model x wafer x mode (grey WSE-1, blue WSE-2, green WSE-3)", fontsize=9)
    return write_figure(figure, out)


def _scaling_figure(frame: pd.DataFrame, out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, group in frame.groupby("model", sort=False):
        (line,) = axes.plot(group["systems"], group["weak_efficiency"], marker="o", label=f"{name} weak")
        axes.plot(
            group["systems"],
            group["strong_efficiency"],
            marker="x",
            linestyle="--",
            color=line.get_color(),
            label=f"{name} strong",
        )
    axes.axhline(0.9, color="black", linewidth=0.8, linestyle=":")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("CS-2 systems")
    axes.set_ylabel("scaling efficiency")
    axes.set_ylim(0, 1.05)
    axes.set_title(
        f"Weight streaming: weak ({TOKENS_PER_SYSTEM} tokens/system) and strong (global {STRONG_GLOBAL_BATCH}) scaling",
        fontsize=9,
    )
    axes.legend(fontsize=7)
    return write_figure(figure, out)


def _kernel_figure(frame: pd.DataFrame, out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(10, 3.5))
    positions = range(len(frame))
    axes.bar(positions, frame["compute_cycles_per_sample"], label="compute cycles/sample")
    axes.bar(positions, frame["communication_cycles_per_sample"], label="fabric cycles/sample", alpha=0.7)
    axes.set_xticks(list(positions), frame["kernel"], rotation=90, fontsize=6)
    axes.set_yscale("log")
    axes.set_ylabel("cycles per sample")
    axes.legend(fontsize=7)
    axes.set_title("BERT-large pipelined on WSE-2: per-kernel compute and fabric time", fontsize=9)
    return write_figure(figure, out)


def performance_markdown(tables: dict[str, pd.DataFrame], record: dict, refusal: str) -> str:
    """The page: ``tables`` (:func:`~csconform.report.performance.performance_tables`), the calibration
    ``record`` whose cross-validation it quotes, and the refusal of a model too large to pipeline."""
    shown = page_tables(tables)
    streamed = "gpt3_xl"
    sequences = f"{batch_per_system(streamed)} sequences of {get_model(streamed).seq_len:,}"
    link_tbps = hardware.get_wafer("wse2").system_io_bytes_per_s * 8 / 1e12
    lines = [
        "# Performance model",
        "",
        "Modeled with `csconform.perf`: hardware presets (every figure sourced, see "
        "`performance_hardware.csv`), per-kernel cost models, the cvxpy placement for pipelined mode "
        "and the weight-streaming / SwarmX / MemoryX model for clusters, with compute at the efficiencies, "
        "the per-layer latency and the input rate calibrated on measured runs "
        "([performance_validation.md](performance_validation.md): error "
        f"{record['fit']['held_out_error']:.3f} on held-out model families, sources and releases, "
        f"{record['data']['rows']} measured runs fitted). Regenerate with "
        "`csconform report --skip conformance,placement,benchmarks`; plan one model with "
        "`csconform plan --model NAME --json OUT` or `csconform plan --model-config config.json`.",
        "",
        "## Throughput on one system",
        "",
        "Pipelined where the model (weights, FP32 optimizer state, in-flight activations) fits the "
        "wafer, at the model's default batch (each batch fills and drains the pipeline); weight streaming "
        f"with {TOKENS_PER_SYSTEM:,} tokens per system ({sequences}). "
        "`model_flops_utilisation` is model FLOPs x samples/s over the peak of the placeable fabric. "
        "Pipelined figures use the efficiencies fitted on weight-streaming runs (no measured pipelined run "
        "was available). The full table over cluster sizes is `performance_throughput.csv`.",
        "",
        markdown_table(shown["single_system"]),
        "",
        refusal,
        "",
        "## Scaling of weight streaming on CS-2 clusters",
        "",
        f"Weak scaling keeps {TOKENS_PER_SYSTEM:,} tokens per system (the data-parallel "
        "sharding of appliance-mode-blog#Weight Streaming Execution on the Cerebras Wafer-Scale Cluster): only "
        "the SwarmX tree depth grows, so efficiency stays near 1 — the "
        "'near-perfect linear scaling' claim (PERF-006 checks it at 8 sequences per system: efficiency at "
        "least 0.9 up to 192 systems). Strong scaling "
        f"splits a fixed global batch of {STRONG_GLOBAL_BATCH:,}: shards shrink until the per-layer latency "
        f"and the weight broadcast over each system's {link_tbps:g} Tb/s link are no longer hidden by compute. More "
        "models and CS-3 clusters: [performance_validation.md](performance_validation.md).",
        "",
        markdown_table(shown["scaling"]),
        "",
        "![scaling](figures/performance_scaling.png)",
        "",
        "## Per-kernel breakdown (BERT-large, pipelined, WSE-2)",
        "",
        markdown_table(shown["kernels"]),
        "",
        f"(first {PAGE_KERNELS} kernels; all in `performance_kernels.csv`)",
        "",
        *table_section("Weight streaming, per layer (GPT-3 XL, 16 CS-2)", shown["streaming_layers"]),
        *table_section("The model's figures against published ones", shown["published"]),
        "## Figures",
        "",
        *(f"![{name}](figures/{file})" for name, file in PAGE_FIGURES.items()),
        "",
    ]
    return "\n".join(lines)


PAGE_FIGURES = {  # alt text -> file in figures/, in the order the page shows them
    "throughput": "performance_throughput.png",
    "placement": "performance_placement_gpt2_medium.png",
    "timeline": "performance_pipeline_timeline.png",
    "streaming": "performance_streaming_gpt3_xl.png",
    "kernels": "performance_kernels.png",
}


def write_performance_reports(out_dir: Path) -> list[Path]:
    """Write reports/performance.md, its CSV tables and the figures; return the paths written."""
    out_dir = Path(out_dir)
    figures = out_dir / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    tables = performance_tables()
    written: list[Path] = []
    for key, frame in tables.items():
        path = out_dir / f"performance_{key}.csv"
        write_csv(frame, path, index=False)
        written.append(path)

    written.append(_throughput_figure(tables["throughput"], figures / "performance_throughput.png"))
    written.append(_scaling_figure(tables["scaling"], figures / "performance_scaling.png"))
    written.append(_kernel_figure(tables["kernels"], figures / "performance_kernels.png"))
    written.append(
        wafer_map(plan("gpt2_medium", "wse2", mode="pipelined"), figures / "performance_placement_gpt2_medium.png")
    )
    written.append(
        wafer_map(
            plan("gpt3_xl", "wse2", systems=16, batch=16 * batch_per_system("gpt3_xl")),
            figures / "performance_streaming_gpt3_xl.png",
        )
    )
    fc = [k["name"] for k in plan("fc_mnist", "wse2", mode="pipelined").kernels]
    written.append(pipeline_timeline(fc, 8, figures / "performance_pipeline_timeline.png"))

    markdown = out_dir / "performance.md"
    write_text(markdown, performance_markdown(tables, calibration_record(), pipelined_refusal()), encoding="utf-8")
    written.append(markdown)
    return written + write_validation_report(out_dir)
