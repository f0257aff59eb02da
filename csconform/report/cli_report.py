"""``csconform report``: the main job — regenerate the published report folder.

The report gathers the conformance matrix (the suite run against an implementation), the
performance model's tables and figures, the placement results on Cerebras' ISPD 2020 instances, the
benchmark results and the mutation-testing table (how many injected bugs the suite catches), then
writes ``index.md`` and ``index.html`` over all of them. Each part can be skipped, so a quick look
at one part does not pay for the others.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from csconform.pytest_plugin import DEFAULT_ENGINE

PARTS = ("conformance", "performance", "placement", "benchmarks", "mutation")


def _conformance(args: argparse.Namespace, out: Path) -> list[Path]:
    from csconform.report.conformance import run_conformance, summary_line, write_conformance_report

    engine = args.engine or os.environ.get("CSCONFORM_ENGINE", DEFAULT_ENGINE)
    matrix = run_conformance(engine, echo=False)
    print(f"  {summary_line(matrix)}")
    return write_conformance_report(out, matrix)


def _performance(args: argparse.Namespace, out: Path) -> list[Path]:
    from csconform.report.performance import write_performance_reports

    return write_performance_reports(out)


def _placement(args: argparse.Namespace, out: Path) -> list[Path]:
    from csconform.report.ispd import write_ispd_report

    return write_ispd_report(out, time_limit_s=args.ispd_time_limit)


def _benchmarks(args: argparse.Namespace, out: Path) -> list[Path]:
    from csconform.report.benchmarks import write_benchmark_report

    return write_benchmark_report(out, Path(args.benchmark_json) if args.benchmark_json else out / "benchmarks.json")


def _mutation(args: argparse.Namespace, out: Path) -> list[Path]:
    from csconform.report.mutation import write_mutation_report

    return write_mutation_report(out)  # from OUT/mutation.json (tox -e mutation), or a note saying how


PRODUCERS: dict[str, Callable[[argparse.Namespace, Path], list[Path]]] = {
    "conformance": _conformance,
    "performance": _performance,
    "placement": _placement,
    "benchmarks": _benchmarks,
    "mutation": _mutation,
}


def report(args: argparse.Namespace) -> int:
    from csconform.report.site import write_index

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for part in PARTS:
        if part in args.skip:
            print(f"{part}: skipped")
            continue
        started = time.perf_counter()
        print(f"{part}: ...", flush=True)
        files = PRODUCERS[part](args, out)
        written += files
        print(f"{part}: {len(files)} files in {time.perf_counter() - started:.1f} s")
    written += write_index(out)
    print(f"report: {len(written)} files in {out}; open {out / 'index.html'}")
    return 0


def _parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown part(s) {', '.join(unknown)}; parts: {', '.join(PARTS)}")
    return parts


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="regenerate the published report (conformance, performance, placement, benchmarks)"
    )
    parser.add_argument("--out", default="reports", help="report folder (default reports/)")
    parser.add_argument("--engine", help="implementation under test (default: $CSCONFORM_ENGINE or csconform.engine)")
    parser.add_argument("--skip", type=_parts, default=[], help=f"comma-separated parts to skip: {', '.join(PARTS)}")
    parser.add_argument(
        "--benchmark-json", help="pytest-benchmark JSON (default: OUT/benchmarks.json, from tox -e bench)"
    )
    parser.add_argument(
        "--ispd-time-limit", type=float, default=60.0, help="seconds per ISPD 2020 instance (default 60)"
    )
    parser.set_defaults(handler=report)
