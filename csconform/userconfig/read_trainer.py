"""The trainer layout of the 2.x Model Zoo params files, read into a RunDescription.

``trainer.init`` builds the Trainer (backend and cluster, model, optimizer, schedulers, precision,
loop, checkpoint, logging, callbacks); ``trainer.fit`` names the training and validation data;
``trainer.validate`` / ``validate_all`` an evaluation. The optimizer is ``{ClassName: {arguments}}``;
the micro-batch size is a ``ScopedTrainFlags`` callback's ``csx.performance.micro_batch_size``.
"""

from __future__ import annotations

from typing import Any

from csconform.documents import KeyPath
from csconform.spec.releases import Release
from csconform.userconfig.config_file import LOOP_KEYS, LOSS_SCALING_KEYS, ConfigFile
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
from csconform.userconfig.package_api import package_api
from csconform.userconfig.schedulers import read_trainer_scheduler

INIT: KeyPath = ("trainer", "init")
FIT: KeyPath = ("trainer", "fit")
MICRO_BATCH_FLAG = "csx.performance.micro_batch_size"


def _optimizer(doc: ConfigFile) -> OptimizerConfig | None:
    path = (*INIT, "optimizer")
    section = doc.section(path)
    if section is None:
        return None
    if len(section) != 1:
        return OptimizerConfig(Setting(sorted(map(str, section)), doc.origin(path)), {}, doc.origin(path))
    name = str(next(iter(section)))
    body = (*path, name)
    arguments = {str(key[-1]): Setting(value, doc.origin(key)) for key, value in doc.entries(body) if value is not None}
    adjustment = arguments.pop("adjust_learning_rate", None)
    return OptimizerConfig(Setting(name, doc.origin(body)), arguments, doc.origin(path), adjustment)


def _lr_schedule(doc: ConfigFile) -> tuple[SchedulerConfig | None, tuple[str, ...]]:
    """The first LR scheduler of ``trainer.init.schedulers`` (weight-decay schedulers skipped)."""
    path = (*INIT, "schedulers")
    entries = list(doc.entries(path)) if isinstance(doc.node(path), list) else []
    if isinstance(doc.node(path), dict):
        entries = [(path, doc.node(path))]
    api = package_api()
    lr_entries = [
        entry_path
        for entry_path, entry in entries
        if not (isinstance(entry, dict) and len(entry) == 1 and api.is_weight_decay_scheduler(next(iter(entry))))
    ]
    if not lr_entries:
        return None, ()
    notes: tuple[str, ...] = ()
    if len(lr_entries) > 1:
        notes = (f"{len(lr_entries)} LR schedulers (one per parameter group): the first is run",)
    return read_trainer_scheduler(doc, lr_entries[0]), notes


def _micro_batch(doc: ConfigFile) -> Setting[Any] | None:
    for callback_path, callback in doc.entries((*INIT, "callbacks")):
        if isinstance(callback, dict) and "ScopedTrainFlags" in callback:
            setting = doc.setting((*callback_path, "ScopedTrainFlags", MICRO_BATCH_FLAG))
            if setting is not None:
                return setting
    return doc.setting((*FIT, "train_dataloader", "micro_batch_size"))


def read_trainer(doc: ConfigFile, release: Release) -> RunDescription:
    """The run a trainer-layout params file describes."""
    model = doc.section((*INIT, "model"))
    name = doc.setting((*INIT, "model", "name"))
    precision = (*INIT, "precision")
    loop = (*INIT, "loop")
    val = (*FIT, "val_dataloader")
    schedule, notes = _lr_schedule(doc)
    return RunDescription(
        file=doc.source,
        layout="trainer",
        release=release,
        model=None
        if model is None
        else ModelSection(
            fields=Setting(model, doc.origin((*INIT, "model"))),
            family=None if name is None else Setting(str(name.value), name.origin),
            kind="zoo",
            seq_len=doc.setting((*FIT, "train_dataloader", "max_sequence_length"))
            or doc.setting((*FIT, "train_dataloader", "src_max_sequence_length")),
            target_len=doc.setting((*FIT, "train_dataloader", "tgt_max_sequence_length")),
            compute_eval_metrics=doc.setting((*INIT, "model", "compute_eval_metrics")),
            data_processors=tuple(
                str(processor.value)
                for loader in ("train_dataloader", "val_dataloader")
                if (processor := doc.setting((*FIT, loader, "data_processor"))) is not None
            ),
        ),
        batch=Batch(
            train=doc.setting((*FIT, "train_dataloader", "batch_size")),
            eval=doc.setting((*val, "batch_size"))
            or doc.setting(("trainer", "validate", "val_dataloader", "batch_size")),
            micro_batch=_micro_batch(doc),
            num_csx=doc.setting((*INIT, "backend", "cluster_config", "num_csx")),
            drop_last=doc.setting((*FIT, "train_dataloader", "drop_last")),
        ),
        precision=Precision(
            mixed_precision=doc.setting((*precision, "enabled")),
            fp16_type=doc.setting((*precision, "fp16_type")),
            precision_opt_level=doc.setting((*precision, "precision_opt_level")),
        ),
        loss_scaling=LossScaling(**doc.settings(precision, LOSS_SCALING_KEYS)),
        optimizer=_optimizer(doc),
        schedule=schedule,
        loop=Loop(
            **doc.settings(loop, {key: key for key in LOOP_KEYS}),
            checkpoint_steps=doc.setting((*INIT, "checkpoint", "steps")),
            log_steps=doc.setting((*INIT, "logging", "log_steps")),
            has_eval_input=doc.section(val) is not None,
        ),
        keys=doc.key_uses(section_depth=3),
        duplicate_keys=doc.duplicate_keys(),
        text_numbers=doc.text_numbers(),
        notes=notes,
    )
