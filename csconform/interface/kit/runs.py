"""A runner's arguments, what every runner refuses of them, and the step output it yields.

The runner interface (:mod:`csconform.interface.runner`) takes a model, a loss function, an optimizer
and the keywords ``grad_scaler``, ``mode``, ``checkpoint_steps`` and ``checkpoint_dir``. An
implementation's ``Runner`` derives from :class:`Runner`, which checks and keeps them and then calls
``prepare()``, where the implementation sets up what the run needs; what it checks beyond that (an
engine's own keywords, a package's own refusals) and how it trains are its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.arguments import check_integer, check_path
from csconform.errors import ExecutionModeError, InvalidInputError

MODES = ("train", "eval", "train_and_eval")
"""The run modes of the interface."""


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`."""
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidInputError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    return mode


@dataclass(frozen=True)
class StepOutput:
    """What the host receives after one step (``step`` counts from 0)."""

    step: int
    loss: float
    loss_scale: float | None
    global_step: int
    checkpoint: Path | None


class Runner:
    """One run of one model: its arguments, checked and kept, and how many steps it has completed."""

    def __init__(
        self,
        model: Any,
        loss_fn: Callable[..., Any],
        optimizer: Any = None,
        *,
        grad_scaler: Any = None,
        mode: str = "train",
        checkpoint_steps: int | None = None,
        checkpoint_dir: str | Path | None = None,
    ) -> None:
        self.check_mode(mode)
        if mode != "eval" and optimizer is None:
            raise InvalidInputError("a training run needs an optimizer")
        if checkpoint_steps is not None and checkpoint_dir is None:
            raise InvalidInputError("checkpoint_steps needs a checkpoint_dir to write to")
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.grad_scaler = grad_scaler
        self.mode = mode
        self.checkpoint_steps = checkpoint_steps
        self.checkpoint_dir = None if checkpoint_dir is None else check_path("checkpoint_dir", checkpoint_dir)
        self.steps_completed = 0
        self.last_checkpoint_step: int | None = None
        self.prepare()

    def prepare(self) -> None:
        """Set up what the run needs once its arguments are checked (nothing here)."""

    @staticmethod
    def check_mode(mode: str) -> str:
        """The modes this runner runs: the interface's (an implementation may refuse more, first)."""
        return check_mode(mode)

    def check_training(self, steps: int) -> int:
        """``steps`` of a ``train`` call, once this run is one that trains."""
        if self.mode == "eval":
            raise ExecutionModeError('this run is in mode "eval"; it cannot train')
        return check_integer("steps", steps, minimum=1)
