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

from csconform.arguments import is_finite_real
from csconform.errors import (
    CsConformError,
    InvalidInputError,
    ModelConfigError,
    ModelSourceError,
    UnknownNameError,
    UnreadableDocumentError,
    UnsupportedModelError,
)
from csconform.findings.collect import Findings
from csconform.findings.finding import FileReport, Location
from csconform.spec.model import Spec
from csconform.spec.releases import Catalogue, Release
from csconform.userconfig.checks import run_checks
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.description import RunDescription, Setting
from csconform.userconfig.fixes import with_edits
from csconform.userconfig.performance import PlanSummary, build_model, model_family, plan_run
from csconform.userconfig.read_flat import read_flat
from csconform.userconfig.read_hf import TrainingOptions, read_hf
from csconform.userconfig.read_trainer import read_trainer
from csconform.userconfig.schedule import KeyPoints, ScheduleNotRunnable, build, key_points, plot

MUP_SCALED = (
    ("mup_base_hidden_size", "hidden_size", "attention and first MLP layers (decoder_attention, decoder_input_ffn)"),
    ("mup_base_filter_size", "filter_size", "second MLP layers (decoder_output_ffn)"),
)
"""muP's width factors: the base width key, the model's width key, the layers whose rate it scales."""
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


@dataclass(frozen=True)
class LayerRate:
    """Layers that train at the schedule's rate times ``factor``: the schedule a file states is the
    base rate, and these layers never see it."""

    layers: str
    factor: float
    source: str

    def rates(self, schedule: KeyPoints | None, learning_rate: dict[int, float]) -> dict[str, Any]:
        """The rates these layers train at: the schedule's peak and last (when the run's length is
        known) and at the steps asked for, each the schedule's times ``factor``."""
        scaled = (
            {} if schedule is None else {"max": schedule.maximum * self.factor, "last": schedule.last * self.factor}
        )
        return {**scaled, "learning_rate": {step: rate * self.factor for step, rate in learning_rate.items()}}

    def as_dict(self, schedule: KeyPoints | None, learning_rate: dict[int, float]) -> dict[str, Any]:
        rates = self.rates(schedule, learning_rate)
        at = {str(step): rate for step, rate in rates.pop("learning_rate").items()}
        return {"layers": self.layers, "factor": self.factor, "source": self.source, **rates, "learning_rate": at}


@dataclass
class Verdict(FileReport):
    """The findings about one file (a :class:`~csconform.findings.finding.FileReport`), and what
    validate ran on it: the schedule's key points, the learning rates asked for, the plan."""

    release: str = ""
    release_is_default: bool = True
    layout: str | None = None
    notes: list[str] = field(default_factory=list)
    parameters: int | None = None
    plan: PlanSummary | None = None
    schedule: KeyPoints | None = None
    learning_rate: dict[int, float] = field(default_factory=dict)
    layer_rates: list[LayerRate] = field(default_factory=list)
    """Layers that train at a multiple of the schedule's rate (muP, ``adjust_learning_rate``)."""
    plot: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "release": self.release,
            "release_is_default": self.release_is_default,
            "layout": self.layout,
            "notes": self.notes,
            "parameters": self.parameters,
            "plan": None if self.plan is None else self.plan.as_dict(),
            "schedule": None if self.schedule is None else self.schedule.as_dict(),
            "learning_rate": {str(step): rate for step, rate in self.learning_rate.items()},
            "layer_rates": [rate.as_dict(self.schedule, self.learning_rate) for rate in self.layer_rates],
            "plot": self.plot,
        }


class NotAConfigError(InvalidInputError):
    """The file reads as a document but is neither a Model Zoo params file nor a Hugging Face config."""


def layout_of(doc: ConfigFile) -> str:
    """``trainer``, ``flat`` or ``hf``; a file that is none of them is not a config."""
    data = doc.data
    if "trainer" in data:
        if not isinstance(data["trainer"], dict):
            raise NotAConfigError(f"{doc.source}: trainer must be a mapping with init, fit, validate")
        return "trainer"
    if any(section in data for section in FLAT_SECTIONS):
        return "flat"
    if "model_type" in data:
        return "hf"
    raise NotAConfigError(
        f"{doc.source}: neither a Model Zoo params file (no trainer, train_input, model, optimizer or runconfig "
        "section) nor a Hugging Face config (no model_type)"
    )


def describe(doc: ConfigFile, options: ValidateOptions) -> RunDescription:
    layout = layout_of(doc)
    if layout == "hf":
        return read_hf(doc, options.release, options.training or TrainingOptions(), options.num_csx)
    if options.training is not None and options.training != TrainingOptions():
        raise InvalidInputError(
            f"{doc.source}: training options (--batch-size, --learning-rate, ...) are for config.json"
        )
    run = read_trainer(doc, options.release) if layout == "trainer" else read_flat(doc, options.release)
    if options.num_csx is not None:
        run = dataclasses.replace(
            run, batch=dataclasses.replace(run.batch, num_csx=Setting(options.num_csx, Location("--num-csx")))
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
    verdict.layer_rates, unscaled = layer_rates(run)
    verdict.notes.extend(unscaled)
    steps = run.steps
    if options.lr_at:
        verdict.learning_rate = dict(zip(options.lr_at, schedule.at(list(options.lr_at)).tolist(), strict=True))
        past = [str(step) for step in options.lr_at if step >= steps] if steps is not None else []
        if past and steps is not None:
            verdict.notes.append(
                f"--lr-at {', '.join(past)}: past the run's last step {steps - 1} (max_steps {steps}); the rate "
                "shown is the schedule's, which training never reaches"
            )
    if steps is None:
        verdict.notes.append("no max_steps or num_steps: the schedule's key points need the run's length")
        return
    verdict.schedule = key_points(schedule, steps)
    if options.plot_path is not None:
        title = f"{Path(run.file).name} (release {run.release})"
        plot(schedule, steps, options.plot_path, title, [(rate.layers, rate.factor) for rate in verdict.layer_rates])
        verdict.plot = str(options.plot_path)


def layer_rates(run: RunDescription) -> tuple[list[LayerRate], list[str]]:
    """``adjust_learning_rate``'s factors, and muP's width scaling, which the Model Zoo's GPT-2-class
    models (gpt2_model.py, 2.10.0) apply to the attention and first MLP layers
    (``mup_base_hidden_size / hidden_size``) and to the second MLP layer (``mup_base_filter_size /
    filter_size``); and a note for each ``adjust_learning_rate`` factor that is not a finite number (no
    rate can be shown for its layers)."""
    rates, notes = [], []
    adjustment = None if run.optimizer is None else run.optimizer.lr_adjustment
    if adjustment is not None and isinstance(adjustment.value, dict):
        for group, factor in adjustment.value.items():
            if is_finite_real(factor):
                rates.append(LayerRate(str(group), float(factor), str(adjustment.origin)))
            else:
                notes.append(
                    f"{adjustment.origin}: {group}'s factor {factor!r} is not a finite number; its layers' rates "
                    "are not shown"
                )
    fields: dict[str, Any] = dict(run.model.fields.value) if run.model is not None and run.model.kind == "zoo" else {}
    for base_key, width_key, layers in MUP_SCALED:
        base: Any = fields.get(base_key)
        width: Any = fields.get(width_key)
        if is_finite_real(base) and is_finite_real(width) and base > 0 and width > 0:
            rates.append(LayerRate(layers, base / width, f"muP: {base_key} / {width_key} = {base}/{width}"))
    return rates, notes


def _model_origin(run: RunDescription, key: str | None, from_top: bool = False) -> Location:
    """Where a model field is: the model section's path plus the key (the key itself when ``from_top``),
    with its line when known."""
    assert run.model is not None
    section = run.model.fields.origin
    if key is None or run.layout == "hf":
        return section if key is None else Location(key)
    path = key if from_top else f"{section.key}.{key}"
    line = next((use.line for use in run.keys if use.path == path), section.line)
    return Location(path, line)


def _plan(run: RunDescription, options: ValidateOptions, verdict: Verdict, found: Findings) -> None:
    family = model_family(run, options.family)
    if family is not None and family.note is not None:
        verdict.notes.append(family.note)
    if any(finding.rule == "CONFIG-066" for finding in found.violations):
        verdict.notes.append("model not planned: its training sequences outrun its position table (CONFIG-066)")
        return
    try:
        model = build_model(run, family)
    except (UnsupportedModelError, UnknownNameError) as exc:
        verdict.notes.append(f"model not planned: {exc}")
        return
    except ModelConfigError as exc:
        origin = _model_origin(run, exc.key, from_top=isinstance(exc, ModelSourceError))
        found.warn("PERF-025", origin, f"the performance model refuses the model: {exc.message}")
        verdict.notes.append("model not planned: the performance model refuses the model section (PERF-025)")
        return
    verdict.parameters = int(model.params)
    if not options.plan:
        return
    try:
        verdict.plan = plan_run(run, model, options.wafer)
    except CsConformError as exc:
        verdict.notes.append(f"model not planned: {exc}")


def read_run(
    path: Path | str, options: ValidateOptions, report: FileReport
) -> tuple[ConfigFile, RunDescription] | None:
    """The file and the run it describes; None, with the reason as ``report.error``, when the file
    cannot be read or is not a config (so that a folder's other files are still judged)."""
    try:
        doc = ConfigFile.read(path)
        return doc, describe(doc, options)
    except (UnreadableDocumentError, NotAConfigError) as exc:
        report.error = str(exc)
        return None


def validate_file(path: Path | str, spec: Spec, options: ValidateOptions) -> Verdict:
    """The verdict on one file for ``options.release``."""
    verdict = Verdict(str(path), release=options.release.name, release_is_default=options.release_is_default)
    read = read_run(path, options, verdict)
    if read is None:
        return verdict
    _, run = read
    verdict.layout = run.layout
    found = Findings(spec, options.release, str(path))
    run_checks(run, found, options.wafer)
    verdict.notes.extend(run.notes)
    _run_schedule(run, options, verdict)
    if run.model is not None:
        _plan(run, options, verdict, found)
    fixed = with_edits([*found.violations, *found.warnings], path, options.release.name)
    verdict.violations = [f for f in fixed if f.severity == "violation"]
    verdict.warnings = [f for f in fixed if f.severity == "warning"]
    return verdict


def release_options(catalogue: Catalogue, release: str | None, **kwargs: Any) -> ValidateOptions:
    """Options for ``release`` (a name or prefix; None: the newest the spec knows)."""
    chosen = catalogue.newest if release is None else catalogue.get(release)
    return ValidateOptions(release=chosen, release_is_default=release is None, **kwargs)
