"""Capabilities ``optim`` and ``lr_schedule``: optimizers and learning rates of the global step.

pytorch-limitations (Learning Rate Scheduler, Weight Streaming mode): the learning rate is a
function of the global step, not a scalar set in the parameter groups mid-run. An optimizer takes ``lr`` as a
number or as a schedule; a schedule maps a global step (int or integer array) to float32 rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray


class Optimizer(Protocol):
    """``engine.optim.SGD`` / ``Adam`` / ``AdamW``: FP32 updates of FP32 master weights."""

    param_groups: list[Any]
    """Dicts with ``"params"`` and the hyper-parameters; on the CS system ``group["lr"] = x`` is refused."""
    global_step: int
    """Updates applied so far (a skipped step does not count): the schedule's step."""

    def step(self, closure: Any = None) -> Any:
        """One update; a ``closure`` is called first and its result returned (PyTorch's convention)."""

    def zero_grad(self) -> None: ...

    def lr_at(self, step: int) -> list[np.float32]:
        """The learning rate of every group for update number ``step`` (a function of the step)."""

    def current_lrs(self) -> list[np.float32]:
        """The learning rates the next ``step()`` will use."""

    def state_dict(self) -> Mapping[str, Any]:
        """``global_step``, per-parameter ``state`` (arrays by index) and ``param_groups``."""

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None: ...


class OptimModule(Protocol):
    """``engine.optim``"""

    SGD: type[Optimizer]
    Adam: type[Optimizer]
    AdamW: type[Optimizer]


class Schedule(Protocol):
    """A learning-rate schedule: a pure function of the global step."""

    def __call__(self, step: int | NDArray[np.integer]) -> np.float32 | NDArray[np.float32]: ...


class LRSchedulerModule(Protocol):
    """``engine.optim.lr_scheduler``: the Cerebras schedules, with the Cerebras keyword names."""

    ConstantLR: type[Schedule]
    PolynomialLR: type[Schedule]
    LinearLR: type[Schedule]
    ExponentialLR: type[Schedule]
    InverseExponentialTimeDecayLR: type[Schedule]
    InverseSquareRootDecayLR: type[Schedule]
    CosineDecayLR: type[Schedule]
    CosineAnnealingLR: type[Schedule]
    StepLR: type[Schedule]
    MultiStepLR: type[Schedule]
    MultiplicativeLR: type[Schedule]
    SequentialLR: type[Schedule]
    PiecewiseConstantLR: type[Schedule]
    CyclicLR: type[Schedule]
    OneCycleLR: type[Schedule]
