"""CSRunConfig: the run configuration of the CerebrasEstimator and its CS-system checks.

estimator-limitations#Config differences: on the CS system seven TensorFlow RunConfig parameters are not
supported, the TF_CONFIG environment variable must be set, and checkpoints may not be saved too
often. The documents give no minimum for ``save_checkpoint_steps``; we chose
``DEFAULT_MIN_SAVE_CHECKPOINT_STEPS`` and let a run configure it (``min_save_checkpoint_steps``).
Each check is one method so that each rule can be reasoned about (and broken) on its own.
On the cpu target none of these checks applies.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from csconform.arguments import check_integer
from csconform.engine import context
from csconform.errors import RunConfigError

UNSUPPORTED_PARAMETERS = (
    "save_checkpoint_secs",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
)
"""RunConfig parameters the CS system refuses (estimator-limitations#Parameters not supported)."""

DEFAULT_MIN_SAVE_CHECKPOINT_STEPS = 100
"""Our chosen lower bound for ``save_checkpoint_steps`` on cs; the documents give no number."""

TF_CONFIG_VARIABLE = "TF_CONFIG"


@dataclass
class CSRunConfig:
    """Run configuration. ``cs_ip`` names the system the run targets (artifacts are bound to it)."""

    model_dir: str | None = None
    cs_ip: str = "cs-0"
    save_checkpoint_steps: int | None = None
    min_save_checkpoint_steps: int = DEFAULT_MIN_SAVE_CHECKPOINT_STEPS
    num_input_workers: int = 1
    save_checkpoint_secs: float | None = None
    train_distribute: Any = None
    device_fn: Any = None
    protocol: str | None = None
    eval_distribute: Any = None
    experimental_distribute: Any = None
    experimental_max_worker_delay_secs: float | None = None

    def __post_init__(self) -> None:
        check_integer("num_input_workers", self.num_input_workers, minimum=1)
        check_integer("min_save_checkpoint_steps", self.min_save_checkpoint_steps, minimum=1)
        if self.save_checkpoint_steps is not None:
            check_integer("save_checkpoint_steps", self.save_checkpoint_steps, minimum=1)

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    # --- the CS-system checks ----------------------------------------------------------------------

    def check_for_system(self, env: Mapping[str, str] | None = None) -> None:
        """Run every configuration check that applies on the current target."""
        if not context.on_cs():
            return
        self.check_unsupported_parameters()
        self.check_save_checkpoint_steps()
        self.check_tf_config(os.environ if env is None else env)

    def check_unsupported_parameters(self) -> None:
        for name in UNSUPPORTED_PARAMETERS:
            self.check_parameter_unset(name)

    def check_parameter_unset(self, name: str) -> None:
        if getattr(self, name) is not None:
            raise RunConfigError(f"RunConfig parameter {name!r} is not supported on the CS system; leave it unset")

    def check_save_checkpoint_steps(self) -> None:
        steps = self.save_checkpoint_steps
        if steps is not None and steps < self.min_save_checkpoint_steps:
            raise RunConfigError(
                f"save_checkpoint_steps={steps} is below the lower bound {self.min_save_checkpoint_steps} "
                "on the CS system: saving checkpoints this often costs too much time (the bound is "
                "csconform's choice, configurable with min_save_checkpoint_steps)"
            )

    def check_tf_config(self, env: Mapping[str, str]) -> None:
        raw = env.get(TF_CONFIG_VARIABLE)
        if raw is None:
            raise RunConfigError(
                f"the {TF_CONFIG_VARIABLE} environment variable must be set when training on the CS system"
            )
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RunConfigError(f"{TF_CONFIG_VARIABLE} is not valid JSON: {exc.msg}") from exc
        if not isinstance(parsed, dict):
            raise RunConfigError(f"{TF_CONFIG_VARIABLE} must be a JSON object, got {type(parsed).__name__}")
