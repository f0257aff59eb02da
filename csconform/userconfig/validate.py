"""One file in, one verdict out: read, describe, check, run the schedule, plan the model.

:func:`validate_file` never raises for a bad file: an unreadable one is a verdict with ``error`` set
(exit status 2), a file that breaks rules a verdict with violations (exit status 1). Options that do
not fit the file (training options for a params file) are the caller's mistake and raise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csconform.errors import (
    CsConformError,
    InvalidInputError,
    ModelConfigError,
    UnknownNameError,
    UnsupportedModelError,
)
from csconform.spec.model import Spec
from csconform.spec.releases import Catalogue, Release
from csconform.userconfig.checks import run_checks
from csconform.userconfig.description import Origin, RunDescription, Setting
from csconform.userconfig.document import Document, UnreadableConfigError, read_document
from csconform.userconfig.findings import Finding, Findings
from csconform.userconfig.performance import PlanSummary, build_model, plan_run
from csconform.userconfig.read_flat import read_flat
from csconform.userconfig.read_hf import TrainingOptions, read_hf
from csconform.userconfig.read_trainer import read_trainer
from csconform.userconfig.schedule import KeyPoints, ScheduleNotRunnable, build, key_points, plot

FLAT_SECTIONS = ("train_input", "eval_input", "model", "optimizer", "runconfig")


@dataclass(frozen=True)
class ValidateOptions:
    release: Release
    release_is_default: bool = True
    wafer: str = "wse2"
    num_csx: int | None = None
    family: str | None = None
    lr_at: tuple[int, ...] = ()
    plot_path: Path | None = None
    plan: bool = True
    training: TrainingOptions | None = None


@dataclass
class Verdict:
    file: str
    release: str
    release_is_default: bool
    layout: str | None = None
    error: str | None = None
    violations: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    parameters: int | None = None
    plan: PlanSummary | None = None
    schedule: KeyPoints | None = None
    learning_rate: dict[int, float] = field(default_factory=dict)
    plot: str | None = None

    @property
    def exit_code(self) -> int:
        return 2 if self.error else 1 if self.violations else 0

    @property
    def outcome(self) -> str:
        return "unreadable" if self.error else "violations" if self.violations else "conforms"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "release": self.release,
            "release_is_default": self.release_is_default,
            "layout": self.layout,
            "outcome": self.outcome,
            "error": self.error,
            "violations": [f.as_dict() for f in self.violations],
            "warnings": [f.as_dict() for f in self.warnings],
            "notes": self.notes,
            "parameters": self.parameters,
            "plan": None if self.plan is None else self.plan.as_dict(),
            "schedule": None if self.schedule is None else self.schedule.as_dict(),
            "learning_rate": {str(step): rate for step, rate in self.learning_rate.items()},
            "plot": self.plot,
        }


def layout_of(doc: Document) -> str:
    """``trainer``, ``flat`` or ``hf``; a file that is none of them is unreadable as a config."""
    data = doc.data
    if "trainer" in data:
        if not isinstance(data["trainer"], dict):
            raise UnreadableConfigError(f"{doc.path}: trainer must be a mapping with init, fit, validate")
        return "trainer"
    if any(section in data for section in FLAT_SECTIONS):
        return "flat"
    if "model_type" in data:
        return "hf"
    raise UnreadableConfigError(
        f"{doc.path}: neither a Model Zoo params file (no trainer, train_input, model, optimizer or runconfig "
        "section) nor a Hugging Face config (no model_type)"
    )


def describe(doc: Document, options: ValidateOptions) -> RunDescription:
    layout = layout_of(doc)
    if layout == "hf":
        return read_hf(doc, options.release, options.training or TrainingOptions(), options.num_csx)
    if options.training is not None and options.training != TrainingOptions():
        raise InvalidInputError(
            f"{doc.path}: training options (--batch-size, --learning-rate, ...) are for config.json"
        )
    run = read_trainer(doc, options.release) if layout == "trainer" else read_flat(doc, options.release)
    if options.num_csx is not None:
        run = dataclasses.replace(
            run, batch=dataclasses.replace(run.batch, num_csx=Setting(options.num_csx, Origin("--num-csx")))
        )
    return run


def _run_schedule(run: RunDescription, options: ValidateOptions, verdict: Verdict) -> None:
    if run.framework != "pytorch":
        verdict.notes.append("TensorFlow params file: its optimizer, LR schedule and loop are not checked or run")
        return
    if run.schedule is None:
        if options.lr_at:
            verdict.notes.append("no LR schedule in the file: --lr-at has nothing to evaluate")
        return
    try:
        schedule = build(run.schedule, strict=run.layout != "flat")
    except ScheduleNotRunnable as exc:
        verdict.notes.append(f"LR schedule not run: {exc}")
        return
    except InvalidInputError:
        return  # reported as LR-004 by the checks
    if schedule.ignored:
        verdict.notes.append(f"LR schedule run without {', '.join(schedule.ignored)}: the release does not read them")
    if options.lr_at:
        verdict.learning_rate = dict(zip(options.lr_at, schedule.at(list(options.lr_at)).tolist(), strict=True))
    steps = run.steps
    if steps is None:
        verdict.notes.append("no max_steps or num_steps: the schedule's key points need the run's length")
        return
    verdict.schedule = key_points(schedule, steps)
    if options.plot_path is not None:
        plot(schedule, steps, options.plot_path, f"{Path(run.file).name} (release {run.release})")
        verdict.plot = str(options.plot_path)


def _model_origin(run: RunDescription, key: str | None) -> Origin:
    """Where a model field is: the model section's path plus the key, with its line when known."""
    assert run.model is not None
    section = run.model.fields.origin
    if key is None or run.layout == "hf":
        return section if key is None else Origin(key)
    path = f"{section.path}.{key}"
    line = next((use.line for use in run.keys if use.path == path), section.line)
    return Origin(path, line)


def _plan(run: RunDescription, options: ValidateOptions, verdict: Verdict, found: Findings) -> None:
    try:
        model = build_model(run, options.family)
    except (UnsupportedModelError, UnknownNameError) as exc:
        verdict.notes.append(f"model not planned: {exc}")
        return
    except ModelConfigError as exc:
        found.warn("PERF-025", _model_origin(run, exc.key), f"the performance model refuses the model: {exc.message}")
        verdict.notes.append("model not planned: the performance model refuses the model section (PERF-025)")
        return
    verdict.parameters = int(model.params)
    if not options.plan:
        return
    try:
        verdict.plan = plan_run(run, model, options.wafer)
    except CsConformError as exc:
        verdict.notes.append(f"model not planned: {exc}")


def validate_file(path: Path | str, spec: Spec, options: ValidateOptions) -> Verdict:
    """The verdict on one file for ``options.release``."""
    verdict = Verdict(str(path), options.release.name, options.release_is_default)
    try:
        doc = read_document(path)
        run = describe(doc, options)
    except UnreadableConfigError as exc:
        verdict.error = str(exc)
        return verdict
    verdict.layout = run.layout
    found = Findings(spec, options.release)
    run_checks(run, found, options.wafer)
    verdict.notes.extend(run.notes)
    _run_schedule(run, options, verdict)
    if run.model is not None:
        _plan(run, options, verdict, found)
    verdict.violations, verdict.warnings = found.violations, found.warnings
    return verdict


def release_options(catalogue: Catalogue, release: str | None, **kwargs: Any) -> ValidateOptions:
    """Options for ``release`` (a name or prefix; None: the newest the spec knows)."""
    chosen = catalogue.newest if release is None else catalogue.get(release)
    return ValidateOptions(release=chosen, release_is_default=release is None, **kwargs)
