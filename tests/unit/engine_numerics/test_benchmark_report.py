"""The benchmark JSON -> table generator."""

from __future__ import annotations

import json

import pytest

from csconform.errors import InvalidInputError
from csconform.report.benchmarks import benchmark_table, mixed_precision_table, write_benchmark_report


def sample() -> dict:
    stats = {"min": 0.01, "median": 0.02, "mean": 0.025, "rounds": 4}
    return {
        "datetime": "2026-01-01T00:00:00",
        "machine_info": {"cpu": {"brand_raw": "Test CPU"}, "python_version": "3.11"},
        "benchmarks": [
            {
                "name": "pair",
                "group": "g",
                "stats": stats,
                "extra_info": {"model": "m", "mixed_ms": [12.0, 15.0, 30.0], "fp32_ms": [10.0, 12.0, 10.0]},
            },
            {"name": "other", "group": None, "stats": stats, "extra_info": {}},
        ],
    }


def test_mixed_precision_table_uses_fastest_steps_and_paired_ratios():
    table = mixed_precision_table(sample())
    assert list(table.columns[:4]) == ["model", "mixed_ms", "fp32_ms", "ratio"]
    row = table.iloc[0]
    assert (row["mixed_ms"], row["fp32_ms"], row["ratio"]) == (12.0, 10.0, 1.2)
    assert row["ratio_median_paired"] == 1.25
    assert len(benchmark_table(sample())) == 2


def test_write_benchmark_report(tmp_path):
    source = tmp_path / "bench.json"
    source.write_text(json.dumps(sample()))
    written = write_benchmark_report(tmp_path / "out", source)
    names = sorted(path.name for path in written)
    assert names == ["benchmarks.csv", "benchmarks.md", "mixed_precision_benchmark.csv", "mixed_precision_benchmark.md"]
    assert "| m " in (tmp_path / "out" / "mixed_precision_benchmark.md").read_text()


def test_bad_benchmark_files_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="no benchmark results"):
        write_benchmark_report(tmp_path, tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(InvalidInputError, match="invalid JSON"):
        write_benchmark_report(tmp_path, broken)
    unpaired = sample()
    unpaired["benchmarks"][0]["extra_info"]["fp32_ms"] = [1.0]
    with pytest.raises(InvalidInputError, match="paired"):
        mixed_precision_table(unpaired)


def test_several_runs_are_merged(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(sample()))
    other = sample()
    other["benchmarks"][0]["extra_info"]["blas_threads"] = "1"
    second.write_text(json.dumps(other))
    write_benchmark_report(tmp_path / "out", [first, second])
    rows = (tmp_path / "out" / "mixed_precision_benchmark.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[2].endswith(",1") and rows[1].endswith(",unknown")
