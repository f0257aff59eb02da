"""The described model through the performance model: size, FLOPs, throughput and time to train.

The model section becomes a :class:`~csconform.perf.models.model_spec.ModelSpec` (a Model Zoo section
through :func:`csconform.perf.models.zoo_section.model_from_zoo_section`, a Hugging Face config through
:func:`csconform.perf.models.hf_config.model_from_config`) and is planned by :func:`csconform.perf.plan.
plan` on the configured number of systems at the configured global batch. Time to train is
``steps x batch / samples_per_s``. Its band is the model's measured error on runs it did not see:
the band the plan states for its mode and model class (grouped cross-validation of the calibration,
``reports/performance_validation.md``) is a factor ``e`` that covers 90 % of the held-out predictions,
so the typical band is ``[t / e, t x e]``; the worst held-out prediction of the class gives the wide band.
A release before 1.9.0 reads the batch as per system (its params files' ``batch_size``). An integer
``micro_batch_size`` is the plan's micro-batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePath
from typing import Any

from csconform.arguments import integer_problem, is_integer
from csconform.errors import CsConformError, UnknownNameError
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo_section import ZOO_FAMILIES, model_from_zoo_section, zoo_model
from csconform.perf.plan import Plan, plan
from csconform.perf.releases import batch_is_per_system
from csconform.userconfig.description import RunDescription
from csconform.userconfig.families import Family, family_from_path, flat_families_release, infer_family
from csconform.userconfig.tf_bert import names_pretraining_file, tensorflow_bert_section


@dataclass(frozen=True)
class Band:
    """A time range: the prediction divided and multiplied by the error factor, the slow end ``slower_by``
    further out on a wafer whose band is widened."""

    factor: float
    slower_by: float
    low_s: float
    high_s: float


@dataclass(frozen=True)
class PlanSummary:
    model: str
    family: str
    parameters: int
    active_parameters: int
    seq_len: int | None
    systems: int
    wafer: str
    mode: str
    mode_source: str
    """Where the mode came from: the file's ``execution_strategy``, or the plan's choice."""
    batch: int
    model_flops_per_step: float
    samples_per_s: float
    tokens_per_s: float | None
    steps: int | None
    time_to_train_s: float | None
    band: Band | None
    worst_band: Band | None
    binding_limit: str
    """What sets the samples/s: ``compute``, ``fabric communication``, ``pipeline fill``, ``input pipeline``,
    ``weight streaming I/O`` or ``per-layer latency``."""
    binding_detail: str
    """The figures behind ``binding_limit`` (each candidate's share or rate)."""
    systems_source: str
    """Where the number of systems came from: the option, the file's key, or what was assumed and why."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_family(run: RunDescription, override: str | None = None) -> Family | None:
    """The zoo model of the run's model section: ``--model-family``, else the section's ``name``,
    else its zoo folder, else inferred from its contents (a flat file copied out of its folder)."""
    if run.model is None or run.model.kind != "zoo":
        return None
    if override:
        return Family(override, "option", f"model family {override} from --model-family")
    if run.model.family is not None:
        return Family(run.model.family.value, "name")
    folder = family_from_path(run.file)
    if folder is not None and folder in ZOO_FAMILIES:
        return Family(folder, "folder")
    inferred = infer_family(
        run.model.fields.value, set(run.model.data_processors), flat_families_release(run.release.name)
    )
    if inferred is None and folder is not None:
        return Family(folder, "folder")  # a zoo folder of a model the performance model does not build
    return inferred


def build_model(run: RunDescription, family: Family | None) -> ModelSpec:
    """The performance model's description of the run's model (a typed error when it has none)."""
    if run.model is None:
        raise CsConformError("the file has no model section")
    seq_len, target_len = (
        setting.value if setting is not None and is_integer(setting.value) else None
        for setting in (run.model.seq_len, run.model.target_len)
    )
    if run.model.kind == "hf":
        return model_from_config(run.model.fields.value, seq_len=seq_len, name=PurePath(run.file).stem)
    if family is None:
        raise UnknownNameError(
            f"the model section names no zoo model and matches none of release "
            f"{flat_families_release(run.release.name)}'s model families; give --model-family "
            f"(one of {', '.join(ZOO_FAMILIES)}) to plan it"
        )
    tensorflow = is_tensorflow_bert(run, family)
    section, notes = tensorflow_bert_section(run) if tensorflow else (dict(run.model.fields.value), [])
    if family.how == "option":
        section["name"] = family.name  # the option wins over the section's own name
    major = run.release.name.split(".")[0]
    try:
        model = model_from_zoo_section(
            section,
            family=family.name,
            source=f"{run.file}: {run.model.fields.origin.key}",
            seq_len=seq_len,
            target_len=target_len,
            name=PurePath(run.file).stem,
            release=f"{major}.x" if major == "1" else run.release.name,
            tensorflow=tensorflow,
        )
        return replace(model, notes=(*notes, *model.notes))
    except UnknownNameError as exc:
        raise UnknownNameError(
            f"{exc}; csconform plans only the families named, so give --model-family with one of them only if "
            "this model is built the same way (--no-plan skips the plan)"
        ) from None


def is_tensorflow_bert(run: RunDescription, family: Family) -> bool:
    """The run's model is one of the 1.x TensorFlow zoo's BERT models: a BERT-class params file in a ``tf``
    folder, or one naming ``model.pretrain_params_path`` (which only those models read)."""
    assert run.model is not None
    known = zoo_model(family.name)
    if known is None or ZOO_FAMILIES[known] != "bert":
        return False
    return run.framework == "tensorflow" or names_pretraining_file(run.model.fields.value)


def _bands(seconds: float, stated: dict[str, Any]) -> tuple[Band, Band]:
    """The typical and the wide band of a time to train: ``seconds`` divided and multiplied by the
    factor, the slow side times the wafer's widening (``slower_by``)."""
    typical, worst, slower_by = float(stated["factor"]), float(stated["worst"]), float(stated["slower_by"])
    return (
        Band(typical, slower_by, seconds / typical, seconds * typical * slower_by),
        Band(worst, slower_by, seconds / worst, seconds * worst * slower_by),
    )


def asked_micro_batch(run: RunDescription) -> int | None:
    """The file's micro_batch_size where it is a positive integer (the plan's micro-batch, as the checks
    judge it: CONFIG-013, CONFIG-014); None for ``auto``, ``explore``, a range and no setting."""
    micro = run.batch.micro_batch
    return int(micro.value) if micro is not None and is_integer(micro.value) and micro.value >= 1 else None


def execution_mode(run: RunDescription) -> tuple[str | None, str]:
    """The mode the file asks for (:attr:`RunDescription.asked_mode`) and where it came from; None when
    the file asks for none and the plan chooses."""
    if run.asked_mode is not None and run.loop.execution_strategy is not None:
        return run.asked_mode, f"the file's {run.loop.execution_strategy.origin}"
    return (
        None,
        "chosen: pipelined where the model fits one system before release 1.9.0, else weight streaming",
    )


def plan_run(run: RunDescription, model: ModelSpec, wafer: str = "wse2") -> PlanSummary:
    """Throughput and time to train of ``model`` at the run's batch on its number of systems."""
    batch = run.batch.train.value if run.batch.train is not None else None
    if integer_problem("batch_size", batch, minimum=1) is not None:
        batch = None
    release = run.release.name
    if batch is not None and batch_is_per_system(release):
        batch *= run.systems
    mode, mode_source = execution_mode(run)
    micro_batch = asked_micro_batch(run)
    result = plan(
        model, wafer=wafer, mode=mode, systems=run.systems, batch=batch, release=release, micro_batch=micro_batch
    )
    steps = run.steps
    seconds = steps * result.batch / result.samples_per_s if steps is not None else None
    band, worst = _bands(seconds, result.band) if seconds is not None and result.band else (None, None)
    tokens = result.samples_per_s * model.seq_len if model.seq_len else None
    limit, detail = binding_limit(result)
    return PlanSummary(
        model=result.model,
        family=model.family,
        parameters=int(model.params),
        active_parameters=int(model.active_params),
        seq_len=model.seq_len,
        systems=result.systems,
        wafer=result.wafer,
        mode=result.mode,
        batch=result.batch,
        model_flops_per_step=float(model.flops_per_sample) * result.batch,
        samples_per_s=float(result.samples_per_s),
        tokens_per_s=tokens,
        steps=steps,
        time_to_train_s=seconds,
        band=band,
        worst_band=worst,
        binding_limit=limit,
        binding_detail=detail,
        systems_source=systems_source(run),
        mode_source=mode_source,
        notes=tuple(dict.fromkeys((*model.notes, *result.notes))),  # the plan repeats some of the model's
    )


LIMIT_NAMES = {
    "input": "input pipeline",
    "compute": "compute",
    "io": "weight streaming I/O",
    "latency": "per-layer latency",
    "fill": "pipeline fill",
    "communication": "fabric communication",
}
"""The limits of :data:`csconform.perf.plan.LIMITS` in the words of validate's summary."""


def binding_limit(result: Plan) -> tuple[str, str]:
    """The limit that sets the plan's samples/s (the plan decides it: :func:`csconform.perf.plan.binding_limit`),
    in words, and the figures that show it."""
    limit = result.binding_limit
    if result.mode == "weight_streaming":
        streaming = result.streaming
        if limit == "input":
            feed = streaming.systems * streaming.input_samples_per_s
            return LIMIT_NAMES[limit], f"the input workers feed {feed:,.4g} samples/s; the wafer would run faster"
        shares = {"compute": streaming.compute_s, "io": streaming.io_exposed_s, "latency": streaming.latency_s}
        detail = ", ".join(f"{LIMIT_NAMES[name]} {share / streaming.step_s:.1%}" for name, share in shares.items())
        return LIMIT_NAMES[limit], f"{detail} of the step"
    pipeline = result.pipeline
    if limit == "input":
        detail = (
            f"the input feeds {pipeline.input_samples_per_s:,.4g} samples/s, the wafer would take "
            f"{pipeline.wafer_samples_per_s:,.4g}"
        )
    elif limit == "fill":
        share = pipeline.fill_latency_s / pipeline.batch_s
        detail = f"filling the pipeline takes {share:.0%} of a batch's time (a larger batch hides it)"
    else:  # the slowest kernel sets the batch time: by its fabric traffic or by its compute
        slowest = max(pipeline.kernels, key=lambda k: k.cycles_per_sample).name
        waits = "waits on its fabric links more than it computes" if limit == "communication" else "is compute-bound"
        detail = f"the slowest kernel, {slowest}, {waits}"
    return LIMIT_NAMES[limit], detail


def systems_source(run: RunDescription) -> str:
    """Where the plan's number of systems came from, or why one system was assumed."""
    setting = run.batch.num_csx
    if setting is None:
        return "assumed: the file sets no num_csx"
    where = setting.origin.key or "num_csx"
    if integer_problem("num_csx", setting.value, minimum=1) is not None:
        return f"assumed 1: {where} {setting.value!r} is not a positive integer"
    if where.startswith("--"):
        return f"from {where}"
    return f"from {where}" + (f" (line {setting.origin.line})" if setting.origin.line else "")
