"""Figures of a plan: the wafer map (pipelined rectangles, drawn by
:func:`~csconform.perf.placement.fabric_map.fabric_map`, or weight-streaming occupancy) and the
pipeline timeline; and :func:`write_figure`, how every figure of the performance pages is written.
matplotlib with the Agg backend, so they render without a display."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from csconform.output_guard import save_figure  # noqa: E402
from csconform.perf.execution.pipelined import timeline  # noqa: E402
from csconform.perf.placement.fabric_map import Region, fabric_map  # noqa: E402
from csconform.perf.plan import Plan  # noqa: E402


def write_figure(figure: plt.Figure, out: Path | str, option: str = "output") -> Path:
    """``figure`` written at the pages' resolution (110 dpi, cropped to its content), then closed:
    pyplot holds every figure it made until it is closed."""
    try:
        return save_figure(figure, out, option, dpi=110, bbox_inches="tight")
    finally:
        plt.close(figure)


def wafer_map(plan: Plan, out: Path | str) -> Path:
    """Pipelined: every kernel's rectangle, shaded by utilisation.  Weight streaming: the time each
    layer occupies the whole wafer during one step, split into compute and exposed I/O."""
    figure = _pipelined_map(plan) if plan.mode == "pipelined" else _streaming_occupancy(plan)
    return write_figure(figure, out, "--png")


def _pipelined_map(plan: Plan) -> plt.Figure:
    regions = [
        Region(kernel["name"], kernel["x"], kernel["y"], kernel["width"], kernel["height"], kernel["utilisation"])
        for kernel in plan.kernels
    ]
    title = (
        f"{plan.model} on {plan.wafer}, pipelined: {plan.samples_per_s:.4g} samples/s\n"
        f"(bound {plan.bound_samples_per_s:.4g}); colour = kernel utilisation"
    )
    return fabric_map(regions, plan.fabric["width"], plan.fabric["height"], title, "utilisation")


def _streaming_occupancy(plan: Plan) -> plt.Figure:
    result = plan.streaming
    figure, axes = plt.subplots(figsize=(9, 3))
    start = 0.0
    for layer in result.layers:
        for compute_s, total_s in (
            (layer.forward_compute_s, layer.forward_s),
            (layer.backward_compute_s, layer.backward_s),
        ):
            axes.barh(0, compute_s * 1e3, left=start * 1e3, color="tab:blue", height=0.6)
            if total_s > compute_s:
                axes.barh(
                    0, (total_s - compute_s) * 1e3, left=(start + compute_s) * 1e3, color="tab:orange", height=0.6
                )
            start += total_s
    axes.set_yticks([])
    axes.set_xlabel("time within one micro-batch pass (ms); blue = wafer computing, orange = waiting on I/O")
    axes.set_title(
        f"{plan.model} on {plan.systems} x {plan.wafer}, weight streaming: each layer occupies the "
        f"whole {plan.fabric['width']} x {plan.fabric['height']} fabric in turn\n"
        f"{plan.samples_per_s:.4g} samples/s, micro-batch {result.micro_batch} x "
        f"{result.micro_batches} per system",
        fontsize=9,
    )
    return figure


def pipeline_timeline(kernel_names: list[str], steps: int, out: Path | str) -> Path:
    """Which sample each kernel processes at each step (forward above, backward below)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    grid = timeline(len(kernel_names), steps)
    figure, axes = plt.subplots(figsize=(min(12, 1 + steps * 0.6), 1 + len(kernel_names) * 0.5))
    for k in range(len(kernel_names)):
        for t in range(steps):
            forward, backward = grid[k, t]
            if forward >= 0:
                axes.add_patch(Rectangle((t, k + 0.5), 1, 0.45, facecolor="tab:blue", edgecolor="white"))
                axes.text(t + 0.5, k + 0.72, f"F{forward}", ha="center", va="center", fontsize=7, color="white")
            if backward >= 0:
                axes.add_patch(Rectangle((t, k + 0.05), 1, 0.45, facecolor="tab:red", edgecolor="white"))
                axes.text(t + 0.5, k + 0.27, f"B{backward}", ha="center", va="center", fontsize=7, color="white")
    steady = (
        next(t for t in range(steps) if (grid[:, t] >= 0).any(axis=1).all()) if steps >= len(kernel_names) else None
    )
    if steady is not None:
        axes.axvline(steady, color="black", linestyle="--", linewidth=1)
        axes.text(steady + 0.05, len(kernel_names) + 0.05, f"steady state from step {steady + 1}", fontsize=8)
    axes.set_xlim(0, steps)
    axes.set_ylim(0, len(kernel_names) + 0.4)
    axes.set_yticks([k + 0.5 for k in range(len(kernel_names))], kernel_names)
    axes.set_xticks([t + 0.5 for t in range(steps)], [str(t + 1) for t in range(steps)])
    axes.set_xlabel("step")
    axes.set_title("layer pipeline: F = forward of sample s, B = backward of sample s", fontsize=9)
    return write_figure(figure, out)
