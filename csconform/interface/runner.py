"""Capability ``runner``: the training loop of pipelined-execution#Layer pipelined mode, checkpoints and resuming.

Losses stream to the host as each step finishes; with ``checkpoint_steps=N`` weights are saved
after steps N-1, 2N-1, ... and the last step (public-facts#Documented error messages), and on the
CS system weights can be fetched only on those steps. A checkpoint restores the run exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from csconform.interface.graph import System


class StepOutput(Protocol):
    """What the host receives after one step (``step`` counts from 0)."""

    step: int
    loss: float
    loss_scale: float | None
    global_step: int
    checkpoint: Path | None


class JobEvent(Protocol):
    """One thing a job did (``action``: launch, compile, program, batch, step, loss, checkpoint) and
    the ``node`` it ran on (the chief, a worker, or a system id)."""

    node: str
    action: str


class Runner(Protocol):
    """``engine.runner.Runner``: one run of one model, in mode "train" or "eval".

    Besides training and evaluating, a run lets a check observe how it used the system:
    ``compiles``, ``artifact``, ``systems`` and ``job_log``. An implementation that cannot see
    them (no compile step on its backend) raises ``Unsupported`` with the reason when they are read.
    A checkpoint it writes holds the sections ``step``, ``model`` (weights by name), ``optimizer``
    (``global_step`` and per-parameter ``state``), ``grad_scaler`` and ``data`` (the data
    iterator's ``state()``), readable with ``checkpoint.load``.
    """

    steps_completed: int
    compiles: int
    """How many times the run compiled its step: once for a graph that never changes."""
    artifact: Any
    """The program of the latest compile (``graph``, ``mode``, ``kernels``, ...); None before it."""
    systems: Sequence[System]
    """The systems the run programs, each with the ``program`` it holds."""
    job_log: Sequence[JobEvent]
    """What the job did so far, in order, and where."""

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
    ) -> None: ...

    def train(
        self, dataset: Any, steps: int, resume_from: str | Path | None = None, data_seed: int | None = None
    ) -> Iterator[StepOutput]:
        """A generator: each step's output is yielded as soon as the step is done."""

    def evaluate(self, dataset: Any, metric: Any = None, steps: int | None = None) -> Any:
        """The metric's single final value over ``dataset`` (mean loss by default)."""

    def fetch_weights(self) -> Mapping[str, Any]:
        """Copies of the weights; on the CS system only right after a checkpoint step."""


class RunnerModule(Protocol):
    """``engine.runner``"""

    Runner: type[Runner]


class CheckpointModule(Protocol):
    """``engine.checkpoint``: how a checkpoint file is written and read back."""

    def save(self, path: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
        """Write ``state`` so that no reader ever sees a partial file."""

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Read a checkpoint back; a damaged file is refused."""
