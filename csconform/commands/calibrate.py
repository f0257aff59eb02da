"""``csconform calibrate``: fit the performance model on measured runs, or score it.

    csconform calibrate [--measured CSV] [--write PATH] [--write-shipped]    fit + grouped cross-validation
    csconform calibrate --evaluate CSV [--csv OUT]     predict measured runs with the stored fit

Fitting fits the runs of the table whose ``use`` is not ``judge``, prints the fitted figures and the
errors (``exp(mean |log(predicted / measured)|)``, and the worst row) of the fit and of grouped
cross-validation (each model family, source and release left out in turn: one fit per group, not per
run), the error band plans state, and per wafer generation what the runs kept to judge say of the fit
(predicted right after it, so that a run it cannot plan is named at once); ``--write PATH`` stores them
in PATH, and ``--write-shipped`` replaces the
calibration file every plan reads (``csconform/perf/calibration/calibration.json``), which nothing else
overwrites. A fit with a non-finite or implausible figure is refused, never stored.
``--evaluate`` predicts each run of another table with the same columns (runs the fit never saw)
and prints the same errors.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from csconform.output_guard import write_csv, write_text
from csconform.perf.calibration.band import bands, grouped_cross_validation, judged_evidence, judged_ratios
from csconform.perf.calibration.fit import calibration_record, error, fit, fitted_runs, worst
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, runs
from csconform.perf.execution.efficiency import calibration_path, check_calibration_record, fitted, forget_calibration


def _progress(what: str) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        print(f"\r  {what}: {done}/{total} fits", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return show


def evaluate(path: str | Path) -> pd.DataFrame:
    """Predicted against measured samples/s for every row of ``path``, with the stored calibration."""
    cal = fitted()
    rows = []
    for run in runs(read_measured(path)):
        predicted = run.predict(cal)
        rows.append(
            {
                "id": run.id,
                "model": run.model.name,
                "wafer": run.wafer,
                "systems": run.systems,
                "global_batch": run.global_batch,
                "mode": run.mode,
                "measured_samples_per_s": run.measured_samples_per_s,
                "predicted_samples_per_s": predicted,
                "ratio": predicted / run.measured_samples_per_s,
            }
        )
    return pd.DataFrame(rows)


def _write_path(text: str) -> str:
    """--write's PATH; a bare --write used to mean the shipped calibration, which now takes --write-shipped."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "needs a PATH; to replace the calibration csconform ships (what every plan reads), give --write-shipped"
        )
    return text


def run(arguments: argparse.Namespace) -> int:
    if arguments.evaluate:
        frame = evaluate(arguments.evaluate)
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        logs = [math.log(r) for r in frame["ratio"]]
        print(f"{len(frame)} runs: error {error(logs):.3f}, worst row {worst(logs):.3f} (predicted / measured)")
        if arguments.csv:
            write_csv(frame, arguments.csv, "--csv", index=False)
        return 0
    path = Path(arguments.measured) if arguments.measured else measured_csv()
    table = runs(read_measured(path))
    data = fitted_runs(table)
    full = fit(data)
    ratios = judged_ratios(table, full.calibration)
    grouped = grouped_cross_validation(data, progress=_progress("grouped cross-validation"))
    band = bands(grouped, data)
    judged = judged_evidence(table, ratios, band) if ratios else None
    record = calibration_record(path, full, band, list(grouped.fits.values()), judged=judged)
    for name, entry in record["parameters"].items():
        relative = entry["relative_standard_error"]
        spread = "unknown: the runs do not pin it down" if relative is None else f"{100 * relative:.0f} %"
        kept = "" if entry["fitted"] else " (not fitted: no run informs it)"
        print(f"  {name:24s} {entry['value']:<12.4g} {entry['unit']:42s} (+- {spread}){kept}")
    print(
        f"{len(data)} runs: fit error {record['fit']['error']:.3f} (worst {record['fit']['worst_row']:.3f}), "
        f"held-out error {band['error']:.3f} (worst {band['worst']:.3f})"
    )
    for name, entry in band["groupings"].items():
        print(f"  leave one {name} out: error {entry['error']:.3f} (worst {entry['worst']:.3f})")
    classes = ", ".join(f"{key} x{entry['factor']:.3g}" for key, entry in band["classes"].items())
    print(f"band ({100 * band['coverage']:.0f} % of held-out predictions): x{band['factor']:.3g}; {classes}")
    for wafer, entry in (judged or {"wafers": {}})["wafers"].items():
        print(
            f"  runs kept to judge on {wafer}: {entry['judged_runs']} "
            f"(fitted: {band['fitted_runs_by_wafer'][wafer]}), median "
            f"predicted / measured {entry['median_ratio']:.3g}, worst x{entry['worst']:.3g}, "
            f"{entry['inside_band']} inside their band"
        )
    if arguments.write or arguments.write_shipped:
        check_calibration_record(record, "the fit")  # a non-finite or implausible fit is never stored
        document = json.dumps(record, indent=2, allow_nan=False) + "\n"
        if arguments.write:
            write_text(arguments.write, document, "--write")
            print(f"calibration written to {arguments.write}")
        if arguments.write_shipped:
            write_text(calibration_path(), document, "--write-shipped", replace_shipped=True)
            forget_calibration()
            print(f"calibration written to {calibration_path()} (every plan reads it)")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--measured", metavar="CSV", help="measured runs to fit (default: the shipped calibration set)")
    parser.add_argument(
        "--write", nargs="?", const="", type=_write_path, metavar="PATH", help="store the fit as JSON in PATH"
    )
    parser.add_argument(
        "--write-shipped",
        action="store_true",
        help="replace the calibration csconform ships, which every plan reads (perf/calibration/calibration.json)",
    )
    parser.add_argument("--evaluate", metavar="CSV", help="predict the runs of CSV with the stored fit; no fitting")
    parser.add_argument("--csv", metavar="OUT", help="with --evaluate: write predicted against measured to OUT")
    parser.set_defaults(handler=run, reads=("measured", "evaluate"), writes={"write": {}, "csv": {}})
