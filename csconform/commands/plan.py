"""The ``csconform plan`` subcommand: model a zoo model, or any model from its config, on a wafer.

    csconform plan (--model gpt2_small | --model-config config.json) [--wafer wse2]
                   [--mode pipelined|weight_streaming] [--systems N] [--batch B] [--seq-len T]
                   [--json OUT] [--png OUT]

``--model-config`` reads a Hugging Face style ``config.json`` (or the same fields as YAML) of a
family :mod:`csconform.perf.models.hf_families` knows; ``--batch`` is the global batch.  Prints a one-line
summary (total and, for a mixture of experts, active parameters; the weight bytes streamed per step)
and the notes on how the config was read.  Unknown names, an unreadable file, a config with a
missing or contradictory field, an encoder-decoder model, a model that does not fit pipelined mode
and a cluster larger than the preset allows are typed errors, which the ``csconform`` entry point
prints as one line and exit status 2.
"""

from __future__ import annotations

import argparse

from csconform.output_guard import write_text
from csconform.perf.models.hf_config import load_model_config
from csconform.perf.plan import MODES, Plan, plan


def run(arguments: argparse.Namespace) -> int:
    """Handler of ``plan``: model, write JSON (and the wafer map), print a summary."""
    model = load_model_config(arguments.model_config) if arguments.model_config is not None else arguments.model
    result = plan(
        model,
        wafer=arguments.wafer,
        mode=arguments.mode,
        systems=arguments.systems,
        batch=arguments.batch,
        seq_len=arguments.seq_len,
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
    line = (
        f"{result.model} on {result.systems} x {result.wafer} ({result.mode}): "
        f"{result.samples_per_s:.4g} samples/s (bound {result.bound_samples_per_s:.4g}), "
        f"{result.params / 1e6:.1f}M parameters{active}{streamed}, {len(result.kernels)} kernels"
    )
    return "\n".join([line, *(f"  note: {note}" for note in result.notes)])


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``plan`` subparser; its handler is stored as ``handler``."""
    parser = subparsers.add_parser(
        "plan", help="model throughput and placement of a model on a wafer", description=__doc__.splitlines()[0]
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="zoo model name (e.g. gpt2_small, gpt3_xl, llama2_7b)")
    which.add_argument(
        "--model-config", metavar="PATH", help="Hugging Face style config.json (or YAML) of the model to plan"
    )
    parser.add_argument("--wafer", default="wse2", help="wse1, wse2 or wse3 (default wse2)")
    parser.add_argument("--mode", choices=MODES, default=None, help="default: chosen from the model size")
    parser.add_argument("--systems", type=int, default=1, help="systems in the cluster (default 1)")
    parser.add_argument("--batch", type=int, default=None, help="global batch over all systems (default: the model's)")
    parser.add_argument("--seq-len", type=int, default=None, help="sequence length (sequence models)")
    parser.add_argument("--json", metavar="OUT", help="write the plan as JSON to OUT")
    parser.add_argument("--png", metavar="OUT", help="write the wafer map as PNG to OUT")
    parser.set_defaults(handler=run, reads=("model_config",), writes={"json": {}, "png": {"suffixes": (".png",)}})
    return parser
