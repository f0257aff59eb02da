"""The flat layout of the 1.x (and 2.0-2.3) Model Zoo params files, read into a RunDescription.

Top-level sections ``train_input``, ``eval_input``, ``model``, ``optimizer``, ``runconfig`` (and
optional ``sparsity``, ...). Where a setting lives follows the vendor's own map from this layout to
the trainer layout (``TRAINER_PARAMS_TO_LEGACY`` in the 2.10 Model Zoo, ``trainer/utils.py``): mixed
precision and the half dtype in ``model``; loss scaling and gradient clipping in ``optimizer``; the
loop, checkpoints and the cluster in ``runconfig``; the batch in the input sections.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from csconform.engine.estimator_config import UNSUPPORTED_PARAMETERS
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
    Setting,
)
from csconform.userconfig.schedulers import read_flat_schedule

# Optimizer keys that configure something other than the optimizer's own arguments.
NOT_OPTIMIZER_ARGUMENTS = {
    "optimizer_type",
    "learning_rate",
    "loss_scaling_factor",
    "initial_loss_scale",
    "steps_per_increase",
    "min_loss_scale",
    "max_loss_scale",
    "max_gradient_norm",
    "max_gradient_value",
    "log_summaries",
    "adjust_learning_rate",
    "disable_lr_steps_reset",
    "grad_accum_steps",
}
# 1.x optimizer spellings -> the package's argument names (PyTorchBaseModel._configure_optimizer, 1.9.1).
# Typed, not read from the extracted per-type arguments: every 1.x release also applies
# ``weight_decay_rate`` through its parameter groups (group_optimizer_params), to optimizer types whose
# constructor call never names it (1.6.0's Adam and AdamW), which the extraction does not record.
OPTIMIZER_ARGUMENT_NAMES = {"weight_decay_rate": "weight_decay", "use_nesterov": "nesterov"}


def _optimizer(doc: ConfigFile) -> OptimizerConfig | None:
    if doc.section(("optimizer",)) is None:
        return None
    arguments: dict[str, Setting[Any]] = {}
    for path, value in doc.entries(("optimizer",)):
        key = str(path[-1])
        if key not in NOT_OPTIMIZER_ARGUMENTS and key not in ("beta1", "beta2") and value is not None:
            arguments[OPTIMIZER_ARGUMENT_NAMES.get(key, key)] = Setting(value, doc.origin(path))
    beta1, beta2 = doc.setting(("optimizer", "beta1")), doc.setting(("optimizer", "beta2"))
    if beta1 is not None or beta2 is not None:  # 1.x: separate keys, defaults 0.9 and 0.999
        betas = [0.9 if beta1 is None else beta1.value, 0.999 if beta2 is None else beta2.value]
        arguments["betas"] = Setting(betas, (beta1 or beta2).origin)  # type: ignore[union-attr]
    name = doc.setting(("optimizer", "optimizer_type")) or Setting(None, doc.origin(("optimizer",)))
    adjustment = doc.setting(("optimizer", "adjust_learning_rate"))
    return OptimizerConfig(name, arguments, doc.origin(("optimizer",)), adjustment)


def _family(doc: ConfigFile) -> Setting[str] | None:
    named = doc.setting(("model", "name"))
    return None if named is None else Setting(str(named.value), named.origin)


def framework_of(path: Path) -> str:
    """``tensorflow`` for a params file in a ``tf`` folder of the 1.x Model Zoo, else ``pytorch``."""
    return "tensorflow" if "tf" in path.parts[:-1] else "pytorch"


def read_flat(doc: ConfigFile, release: Release) -> RunDescription:
    """The run a flat-layout params file describes."""
    model = doc.section(("model",))
    runconfig = doc.section(("runconfig",)) or {}
    return RunDescription(
        file=doc.source,
        layout="flat",
        release=release,
        model=None
        if model is None
        else ModelSection(
            fields=Setting(model, doc.origin(("model",))),
            family=_family(doc),
            kind="zoo",
            seq_len=doc.setting(("train_input", "max_sequence_length"))
            or doc.setting(("train_input", "src_max_sequence_length")),
            target_len=doc.setting(("train_input", "tgt_max_sequence_length")),
            compute_eval_metrics=doc.setting(("model", "compute_eval_metrics")),
            data_processors=tuple(
                str(processor.value)
                for section in ("train_input", "eval_input")
                if (processor := doc.setting((section, "data_processor"))) is not None
            ),
            vocab_size=doc.setting(("train_input", "vocab_size")),
            vocab_file=doc.setting(("train_input", "vocab_file")),
        ),
        batch=Batch(
            train=doc.setting(("train_input", "batch_size")),
            eval=doc.setting(("eval_input", "batch_size")),
            micro_batch=doc.setting(("train_input", "micro_batch_size")),
            num_csx=doc.setting(("runconfig", "num_csx")),
            drop_last=doc.setting(("train_input", "drop_last")),
        ),
        precision=Precision(
            mixed_precision=doc.setting(("model", "mixed_precision")),
            fp16_type=doc.setting(("model", "fp16_type")),
            use_bfloat16=doc.setting(("model", "use_bfloat16")),
            precision_opt_level=doc.setting(("runconfig", "precision_opt_level")),
        ),
        loss_scaling=LossScaling(**doc.settings(("optimizer",), LOSS_SCALING_KEYS)),
        optimizer=_optimizer(doc),
        schedule=read_flat_schedule(doc, ("optimizer", "learning_rate")),
        loop=Loop(
            **doc.settings(
                ("runconfig",),
                {key: key for key in (*LOOP_KEYS, "checkpoint_steps", "log_steps", "mode", "execution_strategy")},
            ),
            has_eval_input=doc.section(("eval_input",)) is not None,
        ),
        keys=doc.key_uses(section_depth=1),
        duplicate_keys=doc.duplicate_keys(),
        text_numbers=doc.text_numbers(),
        framework=framework_of(Path(doc.source)),
        estimator_settings={
            key: Setting(value, doc.origin(("runconfig", key)))
            for key, value in runconfig.items()
            if key in UNSUPPORTED_PARAMETERS and value is not None
        },
    )
