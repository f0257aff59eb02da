"""The ``csconform`` command line.

Each family of subcommands lives beside the code it drives and contributes itself through a
``register(subparsers)`` function; this module only assembles them — importing just the module of
the command being run, so that ``csconform spec list`` does not pay for cvxpy — and turns every
:class:`~csconform.errors.CsConformError` into a one-line message and exit status 2, so that no
command a user runs ends in a bare traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from csconform import __version__
from csconform.errors import CsConformError

# command -> (module with its register(subparsers), one-line help)
COMMANDS = {
    "spec": ("csconform.spec.cli", "list, show and validate the executable spec"),
    "report": ("csconform.report.cli_report", "regenerate the published report: conformance, performance, benchmarks"),
    "check": ("csconform.report.cli", "run the conformance suite against an implementation"),
    "interface": ("csconform.interface.cli", "print the implementation interface, or check an implementation"),
    "place": ("csconform.perf.cli_place", "size and place the kernels of an ISPD 2020 .kgraph instance"),
    "plan": ("csconform.perf.cli_plan", "modeled throughput and placement of a model on a wafer or cluster"),
    "sweep": ("csconform.perf.cli_sweep", "model throughput over models x wafers x batch sizes x cluster sizes"),
    "calibrate": ("csconform.perf.cli_calibrate", "fit the performance model on measured runs, or score it"),
    "diff": ("csconform.testing.differential.cli", "run two implementations in lockstep, judge every difference"),
    "validate": (
        "csconform.userconfig.cli",
        "check a Model Zoo params file or a config.json against the spec; LR schedule and time to train",
    ),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser for ``command``; the other commands appear by name and help only."""
    parser = argparse.ArgumentParser(
        prog="csconform",
        description="Conformance and performance modeling for the Cerebras wafer-scale stack.",
    )
    parser.add_argument("--version", action="version", version=f"csconform {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        if name == command:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in arguments if not a.startswith("-")), None)
    args = build_parser(command).parse_args(arguments)
    try:
        return int(args.handler(args) or 0)
    except CsConformError as exc:
        print(f"csconform: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path the user gave cannot be read or written
        where = f": {exc.filename}" if exc.filename else ""
        print(f"csconform: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("csconform: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
