"""``csconform validate``: does my training setup conform, and how long would it train?

    csconform validate CONFIG [CONFIG|DIR ...] [--release 2.10] [--format text|json|sarif|github] [--json [OUT]]
                       [--lr-at 0,1000,5000] [--plot lr.png] [--num-csx N] [--wafer wse2|wse3] [--model-family NAME]
    csconform validate config.json --batch-size 512 --max-steps 100000 --learning-rate 3e-4
                       --warmup-steps 2000 [--schedule cosine|linear|constant] [--seq-len 2048] ...
    csconform validate CONFIG [CONFIG|DIR ...] --release A --to B [--format text|json] [--json [OUT]]

Reads Model Zoo params files (flat or trainer layout) and Hugging Face ``config.json`` files (with
the training options given here), checks them against the spec's rules for one release, runs the
LR schedule through the reference engine and plans the model. Exit status 0: every file conforms
(warnings allowed); 1: a file breaks a rule; 2: a file cannot be read. A directory means every
``.yaml``, ``.yml`` and ``.json`` file under it. With ``--to B`` it lists instead what changes for
each file from release A (``--release``) to release B; exit status 1 when B refuses what A accepts.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from csconform import output_guard
from csconform.arguments import check_integer
from csconform.documents import format_of
from csconform.errors import InvalidInputError
from csconform.findings.config import ProjectConfig
from csconform.findings.finding import FileReport
from csconform.findings.output import add_output_options, check_output_paths, emit, project_config
from csconform.findings.suppress import comments_text, suppress
from csconform.perf.hardware import get_wafer
from csconform.perf.models.zoo_section import check_zoo_model
from csconform.spec.loader import default_specs_dir, load_spec
from csconform.spec.releases import load_catalogue
from csconform.userconfig.read_hf import SCHEDULES, TrainingOptions
from csconform.userconfig.release_changes import ReleaseChanges, release_changes
from csconform.userconfig.summary import render, render_changes, table
from csconform.userconfig.validate import ValidateOptions, Verdict, release_options, validate_file

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def config_files(arguments: list[str]) -> list[Path]:
    """The files named, with every config file under each directory named: a dangling link or a pipe
    with a config's name is kept, so that its verdict says it cannot be read (never silently dropped)."""
    files: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix.lower() in CONFIG_SUFFIXES and not p.is_dir())
            if not found:
                raise InvalidInputError(f"{path}: no .yaml, .yml or .json file under this directory")
            files += found
        else:
            files.append(path)
    return files


def steps_list(text: str) -> tuple[int, ...]:
    """``"0,100,2000"`` -> (0, 100, 2000); anything but non-negative integers within int64 is refused."""
    try:
        steps = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise InvalidInputError(f"--lr-at takes steps separated by commas (0,1000,5000), got {text!r}") from None
    if not steps:
        raise InvalidInputError(f"--lr-at takes steps separated by commas (0,1000,5000), got {text!r}")
    return tuple(check_integer("--lr-at step", step, minimum=0) for step in steps)


def _plot_paths(files: list[Path], plot: str | None) -> list[Path | None]:
    if plot is None:
        return [None] * len(files)
    if len(files) == 1:
        return [Path(plot)]
    folder = output_guard.check_output_folder(plot, "--plot")  # several files: a folder of plots
    folder.mkdir(parents=True, exist_ok=True)
    stems = [f.stem for f in files]
    return [folder / (f"{stem}.png" if stems.count(stem) == 1 else f"{stem}-{i}.png") for i, stem in enumerate(stems)]


def _training(arguments: argparse.Namespace) -> TrainingOptions:
    return TrainingOptions(
        batch_size=arguments.batch_size,
        max_steps=arguments.max_steps,
        seq_len=arguments.seq_len,
        learning_rate=arguments.learning_rate,
        end_learning_rate=arguments.end_learning_rate,
        warmup_steps=arguments.warmup_steps,
        schedule=arguments.schedule,
        optimizer=arguments.optimizer,
        fp16_type=arguments.fp16_type,
        loss_scaling=arguments.loss_scaling,
        max_gradient_norm=arguments.max_gradient_norm,
        checkpoint_steps=arguments.checkpoint_steps,
    )


def run(arguments: argparse.Namespace) -> int:
    """Handler of ``validate``: one verdict per file, a summary table for several, an exit status."""
    get_wafer(arguments.wafer)  # options naming what does not exist are refused before any file is read
    if arguments.model_family is not None:
        check_zoo_model(arguments.model_family)
    settings = project_config(arguments)
    if arguments.to is not None:
        _check_changes_options(arguments, settings)
    files = [path for path in config_files(arguments.configs) if not settings.excluded(path)]
    with output_guard.protect([("CONFIG", path) for path in files]):  # the files found in folders too
        check_output_paths(arguments)
        if arguments.to is not None:
            return _changes(arguments, files, settings)
        return _validate(arguments, files, settings)


class ChangesOptionError(InvalidInputError):
    """An option that does not go with ``--to`` (which lists changes, not one release's verdict)."""


def _check_changes_options(arguments: argparse.Namespace, settings: ProjectConfig) -> None:
    if (arguments.release or settings.release) is None:
        raise ChangesOptionError("--to B lists what changes from the release --release names: give --release A too")
    given = {"--fix": arguments.fix, "--plot": arguments.plot, "--lr-at": arguments.lr_at}
    for option, value in given.items():
        if value:
            raise ChangesOptionError(f"{option} is for one release's verdict; --to lists changes: drop {option}")
    if arguments.format in ("sarif", "github"):
        raise ChangesOptionError(f"--to lists changes, which --format {arguments.format} cannot carry: text or json")


def _changes(arguments: argparse.Namespace, files: list[Path], settings: ProjectConfig) -> int:
    specs_dir = default_specs_dir()
    spec, catalogue = load_spec(specs_dir), load_catalogue(specs_dir)
    reports: list[ReleaseChanges] = []
    for path in files:

        def options(release: str) -> ValidateOptions:
            return release_options(
                catalogue,
                release,
                wafer=arguments.wafer,
                num_csx=arguments.num_csx,
                family=arguments.model_family,
                plan=False,
                training=_training(arguments),
            )

        source = str(arguments.release or settings.release)  # one of them is given: _check_changes_options
        report = release_changes(path, spec, options(source), options(arguments.to))
        suppress(report, _comments(path), settings.ignores(path).__contains__)
        reports.append(report)
    text = lambda done: "\n\n".join(render_changes(r) for r in done if isinstance(r, ReleaseChanges))  # noqa: E731
    return emit(reports, arguments, spec, "validate", text=text, release=reports[0].source, to=reports[0].target)


def _validate(arguments: argparse.Namespace, files: list[Path], settings: ProjectConfig) -> int:
    plot_paths = _plot_paths(files, arguments.plot)
    for plot_path in plot_paths:
        if plot_path is not None:
            output_guard.check_output(plot_path, "--plot", suffixes=(".png",))
    specs_dir = default_specs_dir()
    spec = load_spec(specs_dir)
    catalogue = load_catalogue(specs_dir)
    lr_at = steps_list(arguments.lr_at) if arguments.lr_at else ()
    verdicts: list[Verdict] = []
    for path, plot_path in zip(files, plot_paths, strict=True):
        options = release_options(
            catalogue,
            arguments.release or settings.release,
            wafer=arguments.wafer,
            num_csx=arguments.num_csx,
            family=arguments.model_family,
            lr_at=lr_at,
            plot_path=plot_path,
            plan=not arguments.no_plan,
            training=_training(arguments),
        )
        verdict = validate_file(path, spec, options)
        suppress(verdict, _comments(path), settings.ignores(path).__contains__)
        verdicts.append(verdict)
    return emit(verdicts, arguments, spec, "validate", text=_text, release=verdicts[0].release)


def _comments(path: Path) -> str | None:
    """The text whose ``csconform: ignore`` comments apply (YAML has comments; JSON has none)."""
    return comments_text(path) if format_of(path) == "yaml" else None


def _text(verdicts: Sequence[FileReport]) -> str:
    blocks = "\n\n".join(render(v) for v in verdicts if isinstance(v, Verdict))
    return blocks + ("\n\n" + table([v for v in verdicts if isinstance(v, Verdict)]) if len(verdicts) > 1 else "")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configs", nargs="+", metavar="CONFIG", help="params files, config.json files or directories")
    parser.add_argument("--release", help="the release to judge for (e.g. 1.9.1, 2.10; default: the newest known)")
    parser.add_argument(
        "--to",
        metavar="RELEASE",
        help="with --release A: list what changes for each file from release A to this one (keys, layout, "
        "optimizer and scheduler arguments, commands, findings)",
    )
    parser.add_argument("--lr-at", metavar="S1,S2,...", help="print the learning rate at these global steps")
    parser.add_argument("--plot", metavar="PATH", help="PNG of the LR schedule (a directory for several files)")
    parser.add_argument("--num-csx", type=int, help="systems in the cluster (overrides the file's num_csx)")
    parser.add_argument("--wafer", default="wse2", help="system to plan on: wse1, wse2 or wse3 (default wse2)")
    parser.add_argument(
        "--model-family",
        help="the Model Zoo model to plan the file as (gpt3, llama, bert/qa, ...); overrides the section's name, "
        "its folder and what validate infers",
    )
    parser.add_argument("--no-plan", action="store_true", help="skip the performance model")
    training = parser.add_argument_group("training options for a config.json")
    training.add_argument("--batch-size", type=int, help="global batch size")
    training.add_argument("--max-steps", type=int, help="training steps")
    training.add_argument("--seq-len", type=int, help="sequence length (default: the model's maximum)")
    training.add_argument("--learning-rate", type=float, help="peak learning rate")
    training.add_argument("--end-learning-rate", type=float, default=0.0, help="final learning rate (default 0)")
    training.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up steps from 0 (default 0)")
    training.add_argument(
        "--schedule", choices=sorted(SCHEDULES), default="cosine", help="after warm-up (default cosine)"
    )
    training.add_argument("--optimizer", default="AdamW", help="optimizer class (default AdamW)")
    training.add_argument("--fp16-type", help="float16, bfloat16 or cbfloat16")
    training.add_argument("--loss-scaling", help="dynamic, or a static loss scale")
    training.add_argument("--max-gradient-norm", type=float, help="global gradient clipping norm")
    training.add_argument("--checkpoint-steps", type=int, help="checkpoint cadence in steps")
    add_output_options(parser)
    parser.set_defaults(handler=run)
