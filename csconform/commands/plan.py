"""``csconform plan``: model a zoo model, or any model from its config, on a wafer.

    csconform plan (--model gpt2_small | --model-config config.json) [--wafer wse2]
                   [--mode pipelined|weight_streaming] [--systems N] [--batch B] [--seq-len T]
                   [--micro-batch M] [--release R] [--json OUT] [--png OUT]

``--model-config`` reads a Hugging Face style ``config.json`` (or the same fields as YAML) of a
family :mod:`csconform.perf.models.hf_families` knows; ``--batch`` is the batch as that release's
params files meant it: global, except before release 1.9.0, where ``batch_size`` was per system (so
the global batch is ``B x N``). ``--release`` also applies the release's mode (pipelined mode before
1.9.0 only) and the efficiency the calibration fitted for it. ``--micro-batch`` is a params file's
``csx.performance.micro_batch_size``: smaller than the lanes the calibration fitted, it splits each
system's batch into more micro-batches, each paying the per-layer latency again.  Prints a one-line summary (total and,
for a mixture of experts, active parameters; the weight bytes streamed per step; the limit that
binds; the error band) and the notes on how the config was read.  Unknown names, an unreadable file, a config with a
missing or contradictory field, an encoder-decoder model, a model that does not fit pipelined mode
and a cluster larger than the preset allows are typed errors, which the ``csconform`` entry point
prints as one line and exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from csconform.output_guard import write_text
from csconform.perf.models.hf_config import load_model_config
from csconform.perf.plan import MODES, Plan, plan
from csconform.perf.releases import batch_is_per_system


def run(arguments: argparse.Namespace) -> int:
    """Handler of ``plan``: model, write JSON (and the wafer map), print a summary."""
    model = load_model_config(arguments.model_config) if arguments.model_config is not None else arguments.model
    batch = arguments.batch
    per_system = batch is not None and batch_is_per_system(arguments.release)
    result = plan(
        model,
        wafer=arguments.wafer,
        mode=arguments.mode,
        systems=arguments.systems,
        batch=batch * arguments.systems if per_system else batch,
        seq_len=arguments.seq_len,
        release=arguments.release,
        micro_batch=arguments.micro_batch,
    )
    if per_system:
        result.notes.append(
            f"release {arguments.release}: --batch {batch} is per system, as its params files' batch_size was "
            f"before 1.9.0 (the Model Zoo 1.9.1 RELEASE-NOTES.md, on 1.9.0): global batch {result.batch}"
        )
    if arguments.json:
        write_text(arguments.json, result.to_json() + "\n", "--json")
    if arguments.png:
        from csconform.perf.figures import wafer_map  # matplotlib only when a figure is asked for

        wafer_map(result, arguments.png)
    print(summary(result))
    return 0


def summary(result: Plan) -> str:
    """The printed result: one line of figures, then the notes on how the model was read."""
    active = ""
    if result.active_params != result.params:
        active = f" ({result.active_params / 1e6:.1f}M active per token)"
    streamed = ""
    if result.mode == "weight_streaming":
        weights = result.breakdown["communication"]["streamed_weight_bytes_per_step"]
        streamed = f", {weights / 1e9:.4g} GB of weights streamed per step"
    release = f", release {result.release}" if result.release else ""
    line = (
        f"{result.model} on {result.systems} x {result.wafer} ({result.mode}{release}): "
        f"{result.samples_per_s:.4g} samples/s (bound {result.bound_samples_per_s:.4g}; {result.binding_limit} "
        f"binds), {result.params / 1e6:.1f}M parameters{active}{streamed}, {len(result.kernels)} kernels"
    )
    lines = [line]
    if result.band:
        lines.append(f"  band: {band_text(result.samples_per_s, result.band)}")
    return "\n".join([*lines, *(f"  note: {note}" for note in result.notes)])


def band_text(samples_per_s: float, band: dict[str, Any]) -> str:
    """The error band in words: the range, the factor, what share of held-out predictions it covers, and
    why its slow side is wider where it is."""
    factor, slower = band["factor"], band["factor"] * band["slower_by"]
    widened = f"; its slow side x{band['slower_by']:.3g} wider: {band['widened']}" if band["widened"] else ""
    return (
        f"{samples_per_s / slower:.4g} to {samples_per_s * factor:.4g} samples/s (x/ {factor:.3g}: "
        f"{100 * band['coverage']:.0f} % of the predictions of runs left out of the fit by model family, source "
        f"or release were within it; {band['from']}{widened})"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="zoo model name (e.g. gpt2_small, gpt3_xl, llama2_7b)")
    which.add_argument(
        "--model-config", metavar="PATH", help="Hugging Face style config.json (or YAML) of the model to plan"
    )
    parser.add_argument("--wafer", default="wse2", help="wse1, wse2 or wse3 (default wse2)")
    parser.add_argument("--mode", choices=MODES, default=None, help="default: chosen from the model size")
    parser.add_argument("--systems", type=int, default=1, help="systems in the cluster (default 1)")
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="global batch over all systems, or per system with a --release before 1.9 (default: the model's)",
    )
    parser.add_argument("--seq-len", type=int, default=None, help="sequence length (sequence models)")
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="samples of a weight-streaming micro-batch (default: the lanes decide)",
    )
    parser.add_argument(
        "--release",
        default=None,
        help="software release (e.g. 1.8.0, 2.4): its batch meaning, its modes and its fitted efficiency",
    )
    parser.add_argument("--json", metavar="OUT", help="write the plan as JSON to OUT")
    parser.add_argument("--png", metavar="OUT", help="write the wafer map as PNG to OUT")
    parser.set_defaults(handler=run, reads=("model_config",), writes={"json": {}, "png": {"suffixes": (".png",)}})
