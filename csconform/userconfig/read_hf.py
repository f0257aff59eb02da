"""A Hugging Face ``config.json`` plus training options from the command line, as a RunDescription.

A ``config.json`` describes the model only; how it is trained comes from options (``--batch-size``,
``--max-steps``, ``--learning-rate``, ``--warmup-steps``, ...), each recorded with the option as its
origin. The schedule is the usual one: a linear warm-up from 0 to the learning rate over
``warmup_steps``, then ``--schedule`` (cosine or linear decay to ``--end-learning-rate``, or constant)
over the remaining steps, built as the same SequentialLR a Model Zoo file would give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from csconform.findings.finding import Location
from csconform.spec.releases import Release
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.description import (
    Batch,
    Loop,
    LossScaling,
    ModelSection,
    OptimizerConfig,
    Precision,
    RunDescription,
    SchedulerConfig,
    Setting,
)

SCHEDULES = {"cosine": "CosineDecayLR", "linear": "LinearLR", "constant": "ConstantLR"}


@dataclass(frozen=True)
class TrainingOptions:
    """Training options given on the command line (None: not given)."""

    batch_size: int | None = None
    max_steps: int | None = None
    seq_len: int | None = None
    learning_rate: float | None = None
    end_learning_rate: float = 0.0
    warmup_steps: int = 0
    schedule: str = "cosine"
    optimizer: str = "AdamW"
    fp16_type: str | None = None
    loss_scaling: str | None = None
    max_gradient_norm: float | None = None
    checkpoint_steps: int | None = None


def _option(name: str, value: Any) -> Setting[Any] | None:
    return None if value is None else Setting(value, Location(f"--{name.replace('_', '-')}"))


def _loss_scaling(text: str | None) -> Setting[Any] | None:
    if text is None or text == "dynamic":
        return _option("loss_scaling", text)
    try:
        return _option("loss_scaling", float(text))
    except ValueError:
        return _option("loss_scaling", text)


def _schedule(options: TrainingOptions) -> SchedulerConfig | None:
    if options.learning_rate is None:
        return None
    origin = Location("--learning-rate")
    rate = Setting(options.learning_rate, origin)
    decay_name = SCHEDULES.get(options.schedule, options.schedule)
    decay_steps = None if options.max_steps is None else max(options.max_steps - options.warmup_steps, 1)
    decay_arguments: dict[str, Setting[Any]]
    if decay_name == "ConstantLR":
        decay_arguments = {"learning_rate": rate}
    else:
        decay_arguments = {
            "initial_learning_rate": rate,
            "end_learning_rate": Setting(options.end_learning_rate, Location("--end-learning-rate")),
        }
        if decay_steps is not None:
            decay_arguments["total_iters"] = Setting(decay_steps, Location("--max-steps"))
    decay = SchedulerConfig(
        Setting(decay_name, Location("--schedule")), options.schedule, decay_arguments, origin=origin
    )
    if not options.warmup_steps:
        return decay
    warmup_origin = Location("--warmup-steps")
    warmup = SchedulerConfig(
        Setting("LinearLR", warmup_origin),
        "warm-up",
        {
            "initial_learning_rate": Setting(0.0, warmup_origin),
            "end_learning_rate": rate,
            "total_iters": Setting(options.warmup_steps, warmup_origin),
        },
        origin=warmup_origin,
    )
    return SchedulerConfig(Setting("SequentialLR", warmup_origin), "warm-up then decay", {}, (warmup, decay), origin)


def read_hf(doc: ConfigFile, release: Release, options: TrainingOptions, num_csx: int | None) -> RunDescription:
    """The run of a Hugging Face model trained with ``options`` on ``num_csx`` systems."""
    optimizer = OptimizerConfig(
        Setting(options.optimizer, Location("--optimizer")),
        {} if options.learning_rate is None else {"lr": Setting(options.learning_rate, Location("--learning-rate"))},
        Location("--optimizer"),
    )
    return RunDescription(
        file=doc.source,
        layout="hf",
        release=release,
        model=ModelSection(
            fields=Setting(doc.data, Location("(config.json)")),
            family=None if "model_type" not in doc.data else doc.setting(("model_type",)),
            kind="hf",
            seq_len=_option("seq_len", options.seq_len),
        ),
        batch=Batch(train=_option("batch_size", options.batch_size), num_csx=_option("num_csx", num_csx)),
        precision=Precision(fp16_type=_option("fp16_type", options.fp16_type)),
        loss_scaling=LossScaling(
            factor=_loss_scaling(options.loss_scaling),
            max_gradient_norm=_option("max_gradient_norm", options.max_gradient_norm),
        ),
        optimizer=optimizer if options.batch_size is not None else None,
        schedule=_schedule(options),
        loop=Loop(
            max_steps=_option("max_steps", options.max_steps),
            checkpoint_steps=_option("checkpoint_steps", options.checkpoint_steps),
        ),
    )
