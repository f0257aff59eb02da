"""The ``csconform`` command line.

Each command lives in its own module, ``csconform/commands/<command>.py``, and contributes itself
through an ``add_arguments(parser)`` function (its help is :data:`COMMANDS`' line, its description
the module's first paragraph); this module only assembles them — importing just the
module of the command being run, so that ``csconform spec list`` does not pay for cvxpy — and turns
every :class:`~csconform.errors.CsConformError` into a one-line message and exit status 2, so that
no command a user runs ends in a bare traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from csconform import __version__, output_guard
from csconform.errors import CsConformError, OutputPathError

# command -> (module with its add_arguments(parser), one-line help)
COMMANDS = {
    "spec": ("csconform.commands.spec", "list, show and validate the executable spec"),
    "report": ("csconform.commands.report", "regenerate the published report: conformance, performance, benchmarks"),
    "check": ("csconform.commands.check", "run the conformance suite against an implementation"),
    "interface": ("csconform.commands.interface", "print the implementation interface, or check an implementation"),
    "place": ("csconform.commands.place", "size and place the kernels of an ISPD 2020 .kgraph instance"),
    "plan": ("csconform.commands.plan", "modeled throughput and placement of a model on a wafer or cluster"),
    "sweep": ("csconform.commands.sweep", "model throughput over models x wafers x batch sizes x cluster sizes"),
    "calibrate": ("csconform.commands.calibrate", "fit the performance model on measured runs, or score it"),
    "diff": ("csconform.commands.diff", "run two implementations in lockstep, judge every difference"),
    "validate": (
        "csconform.commands.validate",
        "check a Model Zoo params file or a config.json against the spec; LR schedule and time to train",
    ),
    "lint": (
        "csconform.commands.lint",
        "check training code (PyTorch, cerebras.pytorch, CerebrasEstimator) against the spec",
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in two lines: what was wrong, and where the usage is (the full
    usage of a command with many options fills a screen and buries the one line that matters).
    Subcommands' parsers are of this class too (argparse builds them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n(usage: {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser for ``command``; the other commands appear by name and help only."""
    parser = _Parser(
        prog="csconform",
        description="Conformance and performance modeling for the Cerebras wafer-scale stack.",
    )
    parser.add_argument("--version", action="version", version=f"csconform {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(subparsers.add_parser(name, help=help_text, description=description(module.__doc__)))
        else:
            subparsers.add_parser(name, help=help_text)
    return parser


def description(docstring: str | None) -> str | None:
    """What ``csconform COMMAND --help`` says above the options: the first paragraph of the command
    module's docstring, as one line of plain text (without reStructuredText's double backquotes)."""
    if not docstring:
        return None
    return " ".join(docstring.split("\n\n")[0].split()).replace("``", "")


def _labels(parser: argparse.ArgumentParser, command: str) -> dict[str, str]:
    """How the user spells each argument of ``command``: ``model_config`` -> ``--model-config``."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    labels: dict[str, str] = {}
    stack = [subparsers.choices[command]]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            else:
                labels.setdefault(action.dest, action.option_strings[-1] if action.option_strings else action.dest)
    return labels


@contextlib.contextmanager
def _guarded(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Iterator[None]:
    """Protect the files the command reads, and check the paths it writes, before it runs.

    A command declares (``set_defaults``) ``reads``: the arguments naming files it reads;
    ``writes``: the arguments naming files it writes, each with its checks (see
    :func:`csconform.output_guard.check_output`); ``writes_into``: the arguments naming folders it
    writes files into.
    """
    labels = _labels(parser, args.command)
    inputs = [(labels[dest], getattr(args, dest)) for dest in getattr(args, "reads", ()) if getattr(args, dest, None)]
    with output_guard.protect(inputs):
        written: dict[Path, str] = {}
        for dest, checks in getattr(args, "writes", {}).items():
            if getattr(args, dest, None) is not None:
                target = output_guard.check_output(getattr(args, dest), labels[dest], **checks)
                if target in written:
                    raise OutputPathError(
                        f"{labels[dest]} and {written[target]} name one file, {getattr(args, dest)}: "
                        "each output needs a path of its own"
                    )
                written[target] = labels[dest]
        for dest in getattr(args, "writes_into", ()):
            if getattr(args, dest, None) is not None:
                output_guard.check_output_folder(getattr(args, dest), labels[dest])
        yield


def _passthrough(
    parser: argparse.ArgumentParser, command: str | None, arguments: list[str]
) -> tuple[list[str], list[str]]:
    """A command that declares ``passthrough`` (the name of an attribute) receives everything after
    the first ``--`` unparsed (``lint --run train.py -- --lr 0.1``); other commands parse it all."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    declared = subparsers.choices[command].get_default("passthrough") if command in subparsers.choices else None
    if declared is None or "--" not in arguments:
        return arguments, []
    cut = arguments.index("--")
    return arguments[:cut], arguments[cut + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in arguments if not a.startswith("-")), None)
    parser = build_parser(command)
    arguments, passed_through = _passthrough(parser, command, arguments)
    args = parser.parse_args(arguments)
    if passed_through:
        setattr(args, args.passthrough, passed_through)
    try:
        with _guarded(parser, args):
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
