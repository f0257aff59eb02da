"""The tables of the performance page: modeled throughput by model x wafer x mode x cluster size,
scaling efficiency, a per-kernel breakdown, the hardware figures with their sources and the model's
figures against published ones; and the cuts of them the page shows (the CSVs hold them whole).

Pure functions from :mod:`csconform.perf` to frames, nothing here is a hard-coded result;
:mod:`csconform.report.performance_page` writes them, with the page's prose and figures.
"""

from __future__ import annotations

import pandas as pd

from csconform.errors import CapacityError
from csconform.perf import hardware
from csconform.perf.execution.pipelined import fits_pipelined
from csconform.perf.execution.streaming import scaling_efficiency, strong_scaling_efficiency
from csconform.perf.models.zoo import ZOO_NAMES, get_model
from csconform.perf.plan import plan

CLUSTER_SIZES = {"wse1": (1,), "wse2": (1, 4, 16, 64, 192), "wse3": (1, 16, 192, 2048)}
TOKENS_PER_SYSTEM = 2**17  # weight streaming: 131k tokens per system per step (64 sequences of 2,048)
SCALING_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 192)
SCALING_MODELS = ("gpt3_xl", "gpt3_13b", "gpt3_175b")
STRONG_GLOBAL_BATCH = 1536  # GPT-3's published largest batch (sequences)


def batch_per_system(name: str) -> int:
    """Sequences per system in the weight-streaming tables: TOKENS_PER_SYSTEM tokens (256 images)."""
    seq_len = get_model(name).seq_len
    return max(1, TOKENS_PER_SYSTEM // seq_len) if seq_len else 256


def throughput_table() -> pd.DataFrame:
    """Every zoo model on every wafer: pipelined where it fits (one system, the model's default batch),
    weight streaming on each cluster size with :func:`batch_per_system` per system."""
    rows = []
    for name in ZOO_NAMES:
        model = get_model(name)
        tokens = model.seq_len or 1
        for wafer, sizes in CLUSTER_SIZES.items():
            peak = hardware.get_wafer(wafer).peak_flops_per_s
            runs = [("pipelined", 1)] if fits_pipelined(model.layers, wafer) else []
            runs += [("weight_streaming", n) for n in sizes]
            for mode, systems in runs:
                batch = None if mode == "pipelined" else batch_per_system(name) * systems
                p = plan(name, wafer, mode=mode, systems=systems, batch=batch)
                rows.append(
                    {
                        "model": name,
                        "params": model.params,
                        "wafer": wafer,
                        "mode": mode,
                        "systems": systems,
                        "global_batch": p.batch,
                        "samples_per_s": p.samples_per_s,
                        "bound_samples_per_s": p.bound_samples_per_s,
                        "tokens_per_s": p.samples_per_s * tokens,
                        "model_flops_utilisation": p.samples_per_s * model.flops_per_sample / (systems * peak),
                    }
                )
    return pd.DataFrame(rows)


def scaling_table() -> pd.DataFrame:
    rows = []
    for name in SCALING_MODELS:
        layers = get_model(name).layers
        for n in SCALING_SIZES:
            rows.append(
                {
                    "model": name,
                    "systems": n,
                    "weak_efficiency": scaling_efficiency(layers, "wse2", n, batch_per_system(name)),
                    "strong_efficiency": strong_scaling_efficiency(layers, "wse2", n, STRONG_GLOBAL_BATCH),
                }
            )
    return pd.DataFrame(rows)


def kernel_table(name: str = "bert_large") -> pd.DataFrame:
    p = plan(name, "wse2", mode="pipelined")
    rows = []
    for kernel, entry in zip(p.pipeline.kernels, p.kernels, strict=True):
        rows.append(
            {
                "kernel": kernel.name,
                "x": kernel.rect.x,
                "y": kernel.rect.y,
                "width": kernel.rect.width,
                "height": kernel.rect.height,
                "cores": kernel.rect.cores,
                "memory_MB": kernel.memory_bytes / 1e6,
                "inflight_samples": kernel.inflight_samples,
                "compute_cycles_per_sample": kernel.compute_cycles_per_sample,
                "communication_cycles_per_sample": kernel.communication_cycles_per_sample,
                "utilisation": entry["utilisation"],
                "samples_per_s": entry["samples_per_s"],
            }
        )
    return pd.DataFrame(rows)


def streaming_layer_table(name: str = "gpt3_xl", systems: int = 16) -> pd.DataFrame:
    p = plan(name, "wse2", systems=systems, batch=batch_per_system(name) * systems)
    return pd.DataFrame(
        [
            {
                "layer": x.name,
                "params": x.params,
                "forward_compute_ms": 1e3 * x.forward_compute_s,
                "backward_compute_ms": 1e3 * x.backward_compute_s,
                "weights_in_ms": 1e3 * x.weights_in_s,
                "gradients_out_ms": 1e3 * x.gradients_out_s,
                "latency_ms": 1e3 * x.latency_s,
                "bound": x.bound,
            }
            for x in p.streaming.layers
        ]
    )


def hardware_table() -> pd.DataFrame:
    rows = []
    for name, wafer in hardware.WAFERS.items():
        for row in wafer.figures():
            rows.append({"wafer": name, **row})
    for figure, value in (
        ("min_capacity_bytes", hardware.MEMORYX.min_capacity_bytes),
        ("max_capacity_bytes", hardware.MEMORYX.max_capacity_bytes),
        ("max_parameters", hardware.MEMORYX.max_parameters),
        ("bytes_per_parameter", hardware.MEMORYX.bytes_per_parameter),
    ):
        rows.append({"wafer": "MemoryX", "figure": figure, "value": value, "source": hardware.MEMORYX.sources[figure]})
    for figure in ("fan_out", "hop_latency_s"):
        rows.append(
            {
                "wafer": "SwarmX",
                "figure": figure,
                "value": getattr(hardware.SWARMX, figure),
                "source": hardware.SWARMX.sources[figure],
            }
        )
    return pd.DataFrame(rows)


def published_table() -> pd.DataFrame:
    """The model's figures against published ones (Calculon-style): modeled, published, ratio.
    (Measured throughput is compared in ``performance_validation.md``.)"""
    w2 = hardware.get_wafer("wse2")
    cs2_peak = w2.published_cores * w2.flops_per_core_per_cycle * w2.clock_hz
    rows = [
        ("CS-2 dense FP16 peak (FLOP/s)", cs2_peak, hardware.CS2_PUBLISHED_PEAK_FLOPS_PER_S, "public-facts#Hardware"),
        (
            "Andromeda, 16 CS-2 (FLOP/s)",
            16 * cs2_peak,
            hardware.ANDROMEDA["peak_flops_per_s"],
            "public-facts#Hardware",
        ),
        (
            "cores in 192 CS-2",
            192 * w2.published_cores,
            150e6,
            "appliance-mode-blog#Introduction (more than)",
        ),
    ]
    for name in ZOO_NAMES:
        model = get_model(name)
        rows.append((f"{name} parameters", model.params, model.published_params, model.source))
    for name in ("gpt3_xl", "gpt3_175b"):
        model = get_model(name)
        rows.append(
            (
                f"{name} training FLOPs per token / 6N",
                model.flops_per_sample / (model.seq_len or 1),
                6 * model.params,
                "public-facts#Hardware (6N)",
            )
        )
    frame = pd.DataFrame(rows, columns=["quantity", "modeled", "published", "source"])
    frame["ratio"] = frame["modeled"] / frame["published"]
    return frame


def performance_tables() -> dict[str, pd.DataFrame]:
    """Every table of the performance page, by name: ``performance_NAME.csv`` holds each whole."""
    return {
        "throughput": throughput_table(),
        "scaling": scaling_table(),
        "kernels": kernel_table(),
        "streaming_layers": streaming_layer_table(),
        "published": published_table(),
        "hardware": hardware_table(),
    }


SINGLE_SYSTEM_COLUMNS = [
    "model",
    "params",
    "wafer",
    "mode",
    "global_batch",
    "samples_per_s",
    "bound_samples_per_s",
    "tokens_per_s",
    "model_flops_utilisation",
]
PAGE_SCALING_SYSTEMS = 192  # the cluster size of the 'near-perfect linear scaling' claim
PAGE_KERNELS = 12  # kernels of the per-kernel breakdown shown on the page
PAGE_STREAMING_LAYERS = 6  # layers of the weight-streaming breakdown shown on the page


def page_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The cuts of :func:`performance_tables` the page shows: one system of every model, wafer and mode;
    the scaling at 192 systems; the first kernels and streamed layers; the published figures whole."""
    throughput, scaling = tables["throughput"], tables["scaling"]
    return {
        "single_system": throughput[throughput["systems"] == 1][SINGLE_SYSTEM_COLUMNS],
        "scaling": scaling[scaling["systems"] == PAGE_SCALING_SYSTEMS],
        "kernels": tables["kernels"].head(PAGE_KERNELS),
        "streaming_layers": tables["streaming_layers"].head(PAGE_STREAMING_LAYERS),
        "published": tables["published"],
    }


def pipelined_refusal(name: str = "gpt3_175b") -> str:
    """What the page says of a model too large for pipelined mode: the planner's refusal, quoted."""
    try:
        plan(name, "wse2", mode="pipelined")
    except CapacityError as error:
        return f"Asking for {name} in pipelined mode is refused: `{error}`"
    return f"{name} was accepted in pipelined mode (unexpected)."
