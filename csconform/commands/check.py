"""``csconform check``: the conformance suite against an implementation, printed as a matrix.

With ``--area`` only those areas' test files run, and only the selection is shown and counted: every
rule their tests named (and the areas' pending rules); rules of those areas checked in other files
are named on a line of their own.

With ``--expected-failures`` the run also says what became of every expectation the run could meet
(as the pytest plugin does): a stale one (an expected failure that passed, an entry that matched no
test) fails the run like a failed rule.
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from pathlib import Path

from tabulate import tabulate

from csconform import output_guard
from csconform.interface.load import check_module_name, implementation_sources
from csconform.pytest_plugin import engine_name, expected_failure_lines
from csconform.report.conformance import level_lines, matrix_frame, run_conformance, selected, summary_line
from csconform.spec.verdict import BINDING_LEVELS
from csconform.triage import read_expected_failures


def check(args: argparse.Namespace) -> int:
    engine = check_module_name(engine_name(args.engine))
    with output_guard.protect(("--engine", source) for source in implementation_sources(engine)):
        if args.json:  # refused now, not after the suite has run
            output_guard.check_output(args.json, "--json")
        return _check(args, engine)


def _check(args: argparse.Namespace, engine: str) -> int:
    areas = args.area or ()
    expected = args.expected_failures or os.environ.get("CSCONFORM_EXPECTED_FAILURES") or None
    pytest_args: list[str] = []
    if expected:
        read_expected_failures(Path(expected), engine)  # refused before the suite starts if malformed or not this run's
        pytest_args += ["--expected-failures", str(Path(expected).resolve())]
    matrix = selected(run_conformance(engine, areas=areas, pytest_args=pytest_args, echo=args.verbose), areas)
    frame = matrix_frame(matrix)
    binding = set(frame.loc[frame["level"].isin(BINDING_LEVELS), "rule"])
    if args.failed_only:
        frame = frame[frame["outcome"] == "failed"]
    frame = frame.assign(title=[textwrap.shorten(t, 64) for t in frame["title"]])
    columns = ["rule", "level", "title", "outcome", "tests"]
    print(tabulate(frame[columns].values.tolist(), headers=columns, tablefmt="simple"))
    print()
    print(summary_line(matrix))
    for line in level_lines(matrix):
        print(line)
    if matrix.get("checked_elsewhere"):
        print(f"not in this selection, checked by other areas' files: {', '.join(matrix['checked_elsewhere'])}")
    for line, _stale in expected_failure_lines(matrix["expected_failures"]) if "expected_failures" in matrix else ():
        print(line)
    if args.json:
        output_guard.write_text(args.json, json.dumps(matrix, indent=2, sort_keys=True) + "\n", "--json")
    failed = any(entry["outcome"] == "failed" and rule in binding for rule, entry in matrix["rules"].items())
    return 1 if failed or matrix.get("expected_failures", {}).get("stale") else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", help="implementation under test (default: $CSCONFORM_ENGINE or csconform.engine)")
    parser.add_argument("--area", action="append", help="only this area's checks (repeatable), e.g. grad_scaler")
    parser.add_argument(
        "--expected-failures",
        metavar="FILE",
        help="ids the implementation is known to fail: a triage YAML file or a text file of ids "
        "(default: $CSCONFORM_EXPECTED_FAILURES)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the matrix as JSON")
    parser.add_argument("--failed-only", action="store_true", help="print only the failed rules")
    parser.add_argument("--verbose", "-v", action="store_true", help="show pytest's own output")
    parser.set_defaults(handler=check, reads=("expected_failures",), writes={"json": {}})
