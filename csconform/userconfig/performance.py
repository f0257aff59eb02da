"""The described model through the performance model: size, FLOPs, throughput and time to train.

The model section becomes a :class:`~csconform.perf.models.model_spec.ModelSpec` (a Model Zoo section
through :func:`csconform.perf.models.zoo_section.model_from_zoo_section`, a Hugging Face config through
:func:`csconform.perf.models.hf_config.model_from_config`) and is planned by :func:`csconform.perf.plan.
plan` on the configured number of systems at the configured global batch. Time to train is
``steps x batch / samples_per_s``. Its band is the model's measured error on runs it did not see:
the band the plan states for its mode and model class (grouped cross-validation of the calibration,
``reports/performance_validation.md``) is a factor ``e`` that covers 90 % of the held-out predictions,
so the typical band is ``[t / e, t x e]``; the worst held-out prediction of the class gives the wide band.
A release before 1.9.0 reads the batch as per system (its params files' ``batch_size``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any

from csconform.arguments import integer_problem, is_integer
from csconform.errors import CsConformError
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo_section import ZOO_FAMILIES, model_from_zoo_section
from csconform.perf.plan import plan
from csconform.perf.releases import batch_is_per_system
from csconform.userconfig.description import RunDescription

FINE_TUNING = ("classifier", "token_classifier", "extractive_summarization")


@dataclass(frozen=True)
class Band:
    """A time range: the prediction divided and multiplied by the error factor."""

    factor: float
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
    batch: int
    model_flops_per_step: float
    samples_per_s: float
    tokens_per_s: float | None
    steps: int | None
    time_to_train_s: float | None
    band: Band | None
    worst_band: Band | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def family_from_path(path: str) -> str | None:
    """The Model Zoo model a params file belongs to, from its folder (``.../gpt3/configs/x.yaml``):
    the nearest folder above ``configs`` that names a zoo model (with its fine-tuning task for BERT),
    else the folder holding ``configs`` itself."""
    parts = [p.lower() for p in PurePath(path).parts]
    if "configs" not in parts:
        return None
    before = parts[: len(parts) - 1 - parts[::-1].index("configs")]
    known = {name.lower(): name for name in ZOO_FAMILIES if "/" not in name}
    for index in range(len(before) - 1, -1, -1):
        if before[index] in known:
            family = known[before[index]]
            task = next((p for p in before[index + 1 :] if p in FINE_TUNING), None)
            return f"{family}/{task}" if task and f"{family}/{task}" in ZOO_FAMILIES else family
    return before[-1] if before else None


def build_model(run: RunDescription, family: str | None = None) -> ModelSpec:
    """The performance model's description of the run's model (a typed error when it has none)."""
    if run.model is None:
        raise CsConformError("the file has no model section")
    seq_len = run.model.seq_len.value if run.model.seq_len is not None else None
    if not is_integer(seq_len):
        seq_len = None
    if run.model.kind == "hf":
        return model_from_config(run.model.fields.value, seq_len=seq_len, name=PurePath(run.file).stem)
    zoo_family = family or (None if "name" in run.model.fields.value else family_from_path(run.file))
    major = run.release.name.split(".")[0]
    return model_from_zoo_section(
        run.model.fields.value,
        family=zoo_family,
        source=f"{run.file}: {run.model.fields.origin.key}",
        seq_len=seq_len,
        name=PurePath(run.file).stem,
        release=f"{major}.x" if major == "1" else run.release.name,
    )


def _bands(seconds: float, stated: dict[str, Any]) -> tuple[Band, Band]:
    typical, worst = float(stated["factor"]), float(stated["worst"])
    return Band(typical, seconds / typical, seconds * typical), Band(worst, seconds / worst, seconds * worst)


def plan_run(run: RunDescription, model: ModelSpec, wafer: str = "wse2") -> PlanSummary:
    """Throughput and time to train of ``model`` at the run's batch on its number of systems."""
    batch = run.batch.train.value if run.batch.train is not None else None
    if integer_problem("batch_size", batch, minimum=1) is not None:
        batch = None
    release = run.release.name
    if batch is not None and batch_is_per_system(release):
        batch *= run.systems
    result = plan(model, wafer=wafer, systems=run.systems, batch=batch, release=release)
    steps = run.steps
    seconds = steps * result.batch / result.samples_per_s if steps is not None else None
    band, worst = _bands(seconds, result.band) if seconds is not None and result.band else (None, None)
    tokens = result.samples_per_s * model.seq_len if model.seq_len else None
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
        notes=tuple(model.notes) + tuple(result.notes),
    )
