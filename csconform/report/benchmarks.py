"""Benchmark tables from pytest-benchmark JSON (``--benchmark-json``).

Two tables:

* ``mixed_precision_benchmark``: from benchmarks whose ``extra_info`` carries paired per-round
  timings ``mixed_ms`` and ``fp32_ms`` (tests/bench/test_mixed_precision.py). ``mixed_ms`` and
  ``fp32_ms`` are the fastest step of each mode (the statistic least disturbed by other processes
  on a shared machine), ``ratio`` = mixed_ms / fp32_ms; ``ratio_median_paired`` is the median over
  rounds of each round's mixed/fp32 ratio, a second, independent estimate.
* ``benchmarks``: every benchmark in the file with its min / median / mean time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from csconform.documents import read_document
from csconform.errors import InputFileError, InvalidInputError
from csconform.output_guard import write_csv, write_text

MIXED_PRECISION_COLUMNS = ["model", "mixed_ms", "fp32_ms", "ratio", "ratio_median_paired", "rounds", "blas_threads"]
BENCHMARK_COLUMNS = ["name", "group", "min_ms", "median_ms", "mean_ms", "rounds"]


MAX_BENCHMARK_BYTES = 64 * 2**20


def _number(value: Any, where: str, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < minimum:
        raise InputFileError(f"{where}: expected a finite number >= {minimum:g}, got {value!r}")
    return float(value)


def load_benchmark_json(path: Path) -> dict[str, Any]:
    """A pytest-benchmark JSON file, with every field the tables read checked (file and key named)."""
    path = Path(path)
    if not path.exists():
        raise InvalidInputError(
            f"{path}: no benchmark results; run pytest tests/bench --benchmark-only --benchmark-json {path}"
        )
    data = read_document(path, what="pytest-benchmark result", max_bytes=MAX_BENCHMARK_BYTES).data
    if not isinstance(data.get("benchmarks"), list):
        raise InputFileError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    for index, bench in enumerate(data["benchmarks"]):
        where = f"{path}: benchmarks[{index}]"
        if (
            not isinstance(bench, dict)
            or not isinstance(bench.get("name"), str)
            or not isinstance(bench.get("stats"), dict)
        ):
            raise InputFileError(f"{where}: expected a benchmark with a 'name' and 'stats'")
        for key in ("min", "median", "mean"):
            _number(bench["stats"].get(key), f"{where}.stats.{key}")
        rounds = bench["stats"].get("rounds")
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise InputFileError(f"{where}.stats.rounds: expected a positive integer, got {rounds!r}")
        info = bench.get("extra_info", {})
        if not isinstance(info, dict):
            raise InputFileError(f"{where}.extra_info: expected a mapping")
        for key in ("mixed_ms", "fp32_ms"):
            if key in info:
                if not isinstance(info[key], list):
                    raise InputFileError(f"{where}.extra_info.{key}: expected a list of milliseconds")
                for round_index, value in enumerate(info[key]):
                    _number(value, f"{where}.extra_info.{key}[{round_index}]", minimum=1e-12)
    machine = data.get("machine_info", {})
    if not isinstance(machine, dict) or not isinstance(machine.get("cpu", {}), dict):
        raise InputFileError(f"{path}: machine_info: expected a mapping (with a 'cpu' mapping)")
    return data


def mixed_precision_table(data: dict[str, Any]) -> pd.DataFrame:
    """One row per model: fastest mixed and FP32 step (ms) and their ratio."""
    rows = []
    for bench in data["benchmarks"]:
        info = bench.get("extra_info", {})
        if "mixed_ms" not in info or "fp32_ms" not in info:
            continue
        mixed = np.asarray(info["mixed_ms"], dtype=float)
        fp32 = np.asarray(info["fp32_ms"], dtype=float)
        if mixed.size == 0 or mixed.size != fp32.size:
            raise InvalidInputError(f"{bench.get('name')}: mixed_ms and fp32_ms must be paired, non-empty lists")
        rows.append(
            {
                "model": info.get("model", bench.get("name")),
                "mixed_ms": mixed.min(),
                "fp32_ms": fp32.min(),
                "ratio": mixed.min() / fp32.min(),
                "ratio_median_paired": float(np.median(mixed / fp32)),
                "rounds": int(mixed.size),
                "blas_threads": str(info.get("blas_threads", "unknown")),
            }
        )
    return pd.DataFrame(rows, columns=MIXED_PRECISION_COLUMNS)


def benchmark_table(data: dict[str, Any]) -> pd.DataFrame:
    """Every benchmark's timing statistics in milliseconds."""
    rows = [
        {
            "name": bench["name"],
            "group": bench.get("group"),
            "min_ms": bench["stats"]["min"] * 1e3,
            "median_ms": bench["stats"]["median"] * 1e3,
            "mean_ms": bench["stats"]["mean"] * 1e3,
            "rounds": bench["stats"]["rounds"],
        }
        for bench in data["benchmarks"]
    ]
    return pd.DataFrame(rows, columns=BENCHMARK_COLUMNS)


def _machine_line(data: dict[str, Any]) -> str:
    machine = data.get("machine_info", {})
    cpu = machine.get("cpu", {}).get("brand_raw", "unknown CPU")
    return (
        f"Measured {data.get('datetime', 'at an unknown time')} on {cpu}, Python {machine.get('python_version', '?')}."
    )


def write_table(table: pd.DataFrame, out: Path, stem: str, title: str, notes: str) -> list[Path]:
    """Write ``stem``.csv and ``stem``.md (a pipe table with a title and notes)."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / f"{stem}.csv", out / f"{stem}.md"
    write_csv(table, csv_path, index=False, float_format="%.3f")
    markdown = table.to_markdown(index=False, floatfmt=".3f") if len(table) else "(no results)"
    write_text(md_path, f"# {title}\n\n{notes}\n\n{markdown}\n")
    return [md_path, csv_path]


def merge_benchmark_runs(paths: Sequence[Path]) -> dict[str, Any]:
    """Several pytest-benchmark files as one (machine and date of the first; all benchmarks)."""
    runs = [load_benchmark_json(path) for path in paths]
    if not runs:
        raise InvalidInputError("no benchmark JSON files given")
    return {**runs[0], "benchmarks": [bench for run in runs for bench in run["benchmarks"]]}


def write_benchmark_report(out: Path, json_paths: Path | Sequence[Path]) -> list[Path]:
    """Write the mixed-precision table (if the runs have one) and the table of all benchmarks."""
    data = merge_benchmark_runs([json_paths] if isinstance(json_paths, str | Path) else list(json_paths))
    machine = _machine_line(data)
    written: list[Path] = []
    mixed = mixed_precision_table(data)
    if len(mixed):
        written += write_table(
            mixed,
            out,
            "mixed_precision_benchmark",
            "Mixed precision versus FP32: one training step",
            "Each round times one mixed-precision step (target cs, operands rounded to float16, FP32 "
            "accumulation and FP32 master weights) and one FP32 step of the same model (target cpu, "
            "compute precision float32) back to back. mixed_ms / fp32_ms: fastest step of each mode; "
            "ratio = mixed_ms / fp32_ms (target: at most 1.5); ratio_median_paired: median of the "
            "per-round ratios; blas_threads: OPENBLAS_NUM_THREADS of the run (the rounding is "
            f"single-threaded NumPy, the matrix products use every BLAS thread). {machine}",
        )
    written += write_table(
        benchmark_table(data), out, "benchmarks", "Benchmarks", f"pytest-benchmark statistics. {machine}"
    )
    return written
