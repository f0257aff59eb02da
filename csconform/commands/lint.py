"""``csconform lint``: does my training code respect the system's limitations, before any compile?

    csconform lint PATH [PATH ...] [--release 2.10] [--format text|json|sarif|github] [--json [OUT]]
                   [--fix [--in-place]] [--config pyproject.toml | --isolated]
    csconform lint [PATH ...] --run SCRIPT [--steps N] [--timeout S] [--step NAME] -- SCRIPT_ARGS ...

Reads Python files (a folder: every .py file under it) and reports, by line and column, what the
documents forbid in training code: Python control flow on a tensor's value or a tensor read inside
the traced step, compiles in a loop, learning rates written into param groups or torch schedulers,
double precision, metrics with several values, batches of changing size, GradScaler calls out of
order, and the CerebrasEstimator's limits (hooks, eval_metric_ops, the input function, repeat, batch,
seeds, RunConfig). ``--run`` also runs SCRIPT for a few steps on CPU and reports what only a run
shows. Exit status 0: no rule broken (warnings allowed); 1: a rule is broken; 2: a file cannot be read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from csconform import output_guard
from csconform.arguments import positive_count, positive_seconds
from csconform.errors import InvalidInputError
from csconform.findings.config import ProjectConfig
from csconform.findings.finding import FileReport
from csconform.findings.output import add_output_options, check_output_paths, emit, project_config
from csconform.findings.suppress import comments_text, suppress
from csconform.spec.loader import default_specs_dir, load_spec
from csconform.spec.model import Spec
from csconform.spec.releases import Release, load_catalogue
from csconform.usercode.files import python_files
from csconform.usercode.lint import lint_paths

DEFAULT_STEPS = 5
DEFAULT_TIMEOUT_S = 120.0


def run(arguments: argparse.Namespace) -> int:
    """Handler of ``lint``: the static checks of every file, the CPU run of ``--run``, one exit status."""
    if not arguments.paths and arguments.run is None:
        raise InvalidInputError("lint needs a PATH to check (or --run SCRIPT)")
    if arguments.script_args and arguments.run is None:
        raise InvalidInputError("arguments after -- are for the script of --run: give --run SCRIPT")
    settings = project_config(arguments)
    specs_dir = default_specs_dir()
    spec = load_spec(specs_dir)
    catalogue = load_catalogue(specs_dir)
    named = arguments.release or settings.release
    release = catalogue.newest if named is None else catalogue.get(named)
    paths = list(arguments.paths) or [arguments.run]
    # every file read is an input, those found in a folder and the script of --run too: outputs are
    # checked against them all
    inputs = [("PATH", path) for path in [*paths, *python_files(paths, settings)]]
    if arguments.run is not None:
        inputs.append(("--run", arguments.run))
    with output_guard.protect(inputs):
        check_output_paths(arguments)
        reports = lint_paths(paths, spec, release, settings)
        if arguments.run is not None:
            reports = _merged(reports, _run(arguments, spec, release, settings))
        return emit(reports, arguments, spec, "lint", release=release.name)


def _run(arguments: argparse.Namespace, spec: Spec, release: Release, settings: ProjectConfig) -> list[FileReport]:
    """The findings of the CPU run of ``--run``, silenced as the static ones are (imported here: a
    static lint never imports torch)."""
    from csconform.usercode.runtime import lint_run

    reports = lint_run(
        Path(arguments.run),
        list(arguments.script_args),
        spec=spec,
        release=release,
        steps=arguments.steps,
        timeout_s=arguments.timeout,
        step=arguments.step,
    )
    for report in reports:
        suppress(report, comments_text(report.path, "Python file"), settings.ignores(report.path).__contains__)
    return reports


def _merged(static: list[FileReport], ran: list[FileReport]) -> list[FileReport]:
    """One report per file: the run's findings added to the static report of the same file."""
    by_path = {Path(report.path).resolve(): report for report in static}
    merged = list(static)
    for report in ran:
        same = by_path.get(Path(report.path).resolve())
        if same is None:
            merged.append(report)
            continue
        same.violations += report.violations
        same.warnings += report.warnings
        same.error = same.error or report.error
        same.suppressed += report.suppressed
    return merged


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="Python files or folders")
    parser.add_argument("--release", help="the release to judge for (e.g. 1.7.1, 2.10; default: the newest known)")
    running = parser.add_argument_group("the run on CPU")
    running.add_argument("--run", metavar="SCRIPT", help="also run SCRIPT's training step for a few steps on CPU")
    running.add_argument(
        "--steps", type=positive_count, default=DEFAULT_STEPS, help=f"steps to run (default {DEFAULT_STEPS})"
    )
    running.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds the run may take (default {DEFAULT_TIMEOUT_S:g})",
    )
    running.add_argument(
        "--step",
        metavar="NAME",
        help="the step function, FUNCTION or MODULE:FUNCTION (default: the first one the script compiles or traces)",
    )
    add_output_options(parser)
    parser.set_defaults(handler=run, script_args=[], passthrough="script_args")
