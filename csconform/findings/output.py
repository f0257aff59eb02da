"""The options and the output every command that reports findings shares (``validate``, ``lint``).

    --format text|json|sarif|github   what is printed (default text)
    --output FILE                     print it into FILE instead (written atomically, never over an input)
    --json [OUT]                      also the JSON form, into OUT (no OUT: JSON alone, on stdout)
    --fix [--in-place]                the mechanical fixes as a diff; --in-place makes them in the files
    --config FILE | --isolated        the [tool.csconform] settings to use, or none

Exit status: 2 when a file cannot be read, else 1 when a rule is broken, else 0.
"""

from __future__ import annotations

import argparse
import codecs
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform import output_guard
from csconform.documents import read_bytes
from csconform.errors import InvalidInputError
from csconform.findings import render
from csconform.findings.config import ProjectConfig, find_config, load_config
from csconform.findings.finding import FileReport
from csconform.findings.fix import apply_fixes, unified_diff
from csconform.spec.model import Spec


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("--format", choices=render.FORMATS, default="text", help="what is printed (default text)")
    group.add_argument("--output", metavar="FILE", help="print into FILE instead of the terminal")
    group.add_argument(
        "--json", nargs="?", const="-", metavar="OUT", help="also write the JSON form to OUT (no OUT: JSON on stdout)"
    )
    group.add_argument("--fix", action="store_true", help="print the mechanical fixes as a diff (writes nothing)")
    group.add_argument("--in-place", action="store_true", help="with --fix: make the fixes in the files themselves")
    settings = parser.add_argument_group("settings")
    settings.add_argument("--config", metavar="FILE", help="the pyproject.toml whose [tool.csconform] to use")
    settings.add_argument("--isolated", action="store_true", help="ignore every pyproject.toml")


def project_config(arguments: argparse.Namespace) -> ProjectConfig:
    """The settings the options ask for: none, the file named, or the nearest pyproject.toml's."""
    if arguments.isolated and arguments.config:
        raise InvalidInputError("--config and --isolated contradict each other: give one")
    if arguments.isolated:
        return ProjectConfig()
    if arguments.config:
        return load_config(Path(arguments.config))
    return find_config()


def check_output_paths(arguments: argparse.Namespace) -> None:
    """Refuse, before any work, an output path that is an input or cannot be written."""
    if arguments.in_place and not arguments.fix:
        raise InvalidInputError("--in-place makes the fixes of --fix: give --fix too")
    named = {
        "--output": arguments.output,
        "--json": None if arguments.json == "-" else arguments.json,
        "--plot": getattr(arguments, "plot", None),  # validate's LR plot (a folder for several files)
    }
    written: dict[Path, str] = {}
    for option, path in named.items():
        if path is None:
            continue
        target = Path(path).resolve() if option == "--plot" else output_guard.check_output(path, option)
        if target in written:
            raise InvalidInputError(f"{written[target]} and {option} both name {path}: name two files")
        written[target] = option


def emit(
    reports: Sequence[FileReport],
    arguments: argparse.Namespace,
    spec: Spec,
    command: str,
    text: Callable[[Sequence[FileReport]], str] = render.text,
    **extra: Any,
) -> int:
    """Print (or write) the reports in the form asked for, or the fixes' diff; the exit status (the
    findings as found, before any fix)."""
    document = render.json_document(reports, command, **extra)
    if arguments.json not in (None, "-"):
        output_guard.write_text(arguments.json, render.json_text(document), "--json")
    fixes = [_fixed(report) for report in reports] if arguments.fix else []
    if arguments.fix and not arguments.in_place:
        printed = "".join(fix.diff for fix in fixes)  # the diff alone: `patch -p1` takes it
    elif arguments.json == "-" or arguments.format == "json":
        printed = render.json_text(document)
    elif arguments.format == "sarif":
        printed = render.json_text(render.sarif(reports, spec))
    elif arguments.format == "github":
        printed = render.github(reports)
    else:
        printed = text(reports)
    if arguments.output is not None:
        output_guard.write_text(
            arguments.output, printed if printed.endswith("\n") or not printed else printed + "\n", "--output"
        )
    elif printed:
        print(printed.rstrip("\n"))
    if arguments.fix:
        _report_fixes(fixes, in_place=arguments.in_place)
        for report in reports:  # the diff says nothing of a file that could not be read: say it here
            if report.error:
                named = report.error if report.error.startswith(report.path) else f"{report.path}: {report.error}"
                print(f"csconform {command}: error: {named}", file=sys.stderr)
    return max((report.exit_code for report in reports), default=0)


@dataclass(frozen=True)
class _FileFixes:
    path: str
    applied: int
    """How many findings' edits apply."""
    diff: str
    original: bytes
    fixed: str


def _fixed(report: FileReport) -> _FileFixes:
    """The fixes of one file's findings: the text they make and its diff."""
    if not any(f.edits for f in report.findings):
        return _FileFixes(report.path, 0, "", b"", "")
    original = read_bytes(report.path, what="file to fix")
    before = original.decode("utf-8-sig")
    fixed = apply_fixes(before, report.findings)
    return _FileFixes(report.path, fixed.applied, unified_diff(report.path, before, fixed.text), original, fixed.text)


def _report_fixes(fixes: Sequence[_FileFixes], in_place: bool) -> None:
    """One line on stderr counting the fixes; with ``in_place`` the files rewritten first."""
    made = [fix for fix in fixes if fix.applied]
    if in_place:
        for fix in made:
            bom = codecs.BOM_UTF8 if fix.original.startswith(codecs.BOM_UTF8) else b""
            output_guard.replace_input(fix.path, fix.original, bom + fix.fixed.encode("utf-8"))
    total = sum(fix.applied for fix in made)
    counted = f"{total} fix{'es' if total != 1 else ''} in {len(made)} file{'s' if len(made) != 1 else ''}"
    done = "made; run again to see what remains" if in_place else "shown as a diff; --fix --in-place makes them"
    print(f"{counted} {done}", file=sys.stderr)
