"""``csconform sweep``: the performance model over a design space, locally or on a Dask cluster, as a
CSV and a markdown table."""

from __future__ import annotations

import argparse
from pathlib import Path

from csconform.arguments import positive_seconds
from csconform.errors import InvalidInputError
from csconform.output_guard import write_csv, write_text


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return names


def _integers(text: str) -> list[int]:
    try:
        return [int(part) for part in _names(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from csconform.perf.sweep import design_space, run_sweep

    if Path(args.out).suffix:
        raise InvalidInputError(f"--out names a folder (sweep.csv and sweep.md are written into it), got {args.out}")
    modes = [None if m == "auto" else m for m in args.modes]
    points = design_space(args.models, args.wafers, args.systems, args.batches or [None], modes)
    frame = run_sweep(
        points,
        scheduler=args.scheduler,
        time_limit_s=args.time_limit,
        progress=not args.quiet,
        connect_timeout_s=args.scheduler_timeout,
    )
    out = Path(args.out)
    write_csv(frame, out / "sweep.csv", "--out", index=False)
    table = tabulate(frame.values.tolist(), headers=list(frame.columns), tablefmt="github", floatfmt=".4g")
    write_text(out / "sweep.md", table + "\n", "--out")
    ok = frame[frame["status"] == "ok"]
    print(
        f"{len(frame)} points ({len(ok)} modeled, {len(frame) - len(ok)} refused) -> {out / 'sweep.csv'}, "
        f"{out / 'sweep.md'}"
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models", type=_names, required=True, help="comma-separated zoo names, e.g. gpt2_small,bert_base"
    )
    parser.add_argument("--wafers", type=_names, default=["wse2"], help="comma-separated wafers (default wse2)")
    parser.add_argument("--systems", type=_integers, default=[1], help="comma-separated cluster sizes (default 1)")
    parser.add_argument("--batches", type=_integers, default=None, help="comma-separated global batch sizes")
    parser.add_argument(
        "--modes",
        type=_names,
        default=["auto"],
        help="comma-separated: auto, pipelined, weight_streaming (default auto)",
    )
    parser.add_argument("--out", default="reports/sweep", help="output directory (default reports/sweep)")
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler address (tcp://host:port); default: run locally",
    )
    parser.add_argument(
        "--scheduler-timeout",
        type=positive_seconds,
        default=10.0,
        help="seconds to wait for the Dask scheduler (default 10)",
    )
    parser.add_argument(
        "--time-limit", type=positive_seconds, default=5.0, help="placement time limit per point, seconds"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run, writes_into=("out",))
