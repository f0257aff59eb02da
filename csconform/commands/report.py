"""``csconform report``: the main job — regenerate the published report folder.

The report gathers the sections of :mod:`csconform.report.sections` (the conformance matrix, the
vendor's matrix beside it from ``tox -e cstorch``, the performance model's tables and figures, the
placement results on Cerebras' ISPD 2020 instances, the benchmark results and the page of the
project's mutation run), then writes ``index.md`` and ``index.html`` over all of them. Each section
can be skipped, so a quick look at one part does not pay for the others. A section whose inputs are
missing (no benchmark results yet) gets a page that names the command producing them, and the
command still exits 0, with a one-line warning; a section that fails makes it exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from csconform.arguments import positive_seconds
from csconform.interface.load import check_module_name
from csconform.pytest_plugin import engine_name
from csconform.report import sections
from csconform.report.sections import ReportOptions, SectionResult, render_report


def part_names() -> tuple[str, ...]:
    """What --skip takes: the sections' names, read when asked (a test may swap the sections)."""
    return tuple(section.name for section in sections.SECTIONS)


def _progress(result: SectionResult) -> None:
    name = result.section.name
    if result.status == "rendered":
        print(f"{name}: {len(result.files)} files in {result.seconds:.1f} s", flush=True)
    elif result.status == "missing":
        print(f"{name}: not generated, inputs missing ({result.detail})", flush=True)
    elif result.status == "failed":
        print(f"{name}: FAILED after {result.seconds:.1f} s: {result.detail}", flush=True)
    else:
        print(f"{name}: skipped", flush=True)


def report(args: argparse.Namespace) -> int:
    from csconform.report.site import write_index

    options = ReportOptions(
        out=Path(args.out),
        engine=check_module_name(engine_name(args.engine)),
        benchmark_json=Path(args.benchmark_json) if args.benchmark_json else None,
        ispd_time_limit_s=args.ispd_time_limit,
    )
    started = time.perf_counter()
    results = render_report(options, skip=args.skip, progress=_progress)
    written = [path for result in results for path in result.files] + write_index(options.out)
    elapsed = time.perf_counter() - started
    print(f"report: {len(written)} files in {options.out} in {elapsed:.0f} s; open {options.out / 'index.html'}")
    missing = [result.section.name for result in results if result.status == "missing"]
    failed = [result.section.name for result in results if result.status == "failed"]
    if missing:
        print(
            f"csconform: warning: not generated, inputs missing: {', '.join(missing)} "
            "(each one's page says how to produce them)",
            file=sys.stderr,
        )
    if failed:
        print(f"csconform: error: sections failed: {', '.join(failed)} (see their pages)", file=sys.stderr)
        return 1
    return 0


def _parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in part_names()]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown part(s) {', '.join(unknown)}; parts: {', '.join(part_names())}")
    return parts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="reports", help="report folder (default reports/)")
    parser.add_argument("--engine", help="implementation under test (default: $CSCONFORM_ENGINE or csconform.engine)")
    parser.add_argument(
        "--skip", type=_parts, default=[], help=f"comma-separated parts to skip: {', '.join(part_names())}"
    )
    parser.add_argument(
        "--benchmark-json", help="pytest-benchmark JSON (default: OUT/benchmarks.json, from tox -e bench)"
    )
    parser.add_argument(
        "--ispd-time-limit", type=positive_seconds, default=60.0, help="seconds per ISPD 2020 instance (default 60)"
    )
    parser.set_defaults(handler=report, reads=("benchmark_json",), writes_into=("out",))
