"""The ``csconform`` command line.

Each family of subcommands lives beside the code it drives and contributes itself through a
``register(subparsers)`` function; this module only assembles them and turns every
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

COMMAND_MODULES = (
    "csconform.spec.cli",
    "csconform.report.cli",
    "csconform.perf.cli_place",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="csconform",
        description="Conformance and performance modeling for the Cerebras wafer-scale stack.",
    )
    parser.add_argument("--version", action="version", version=f"csconform {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except CsConformError as exc:
        print(f"csconform: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("csconform: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
