"""Capability ``runner``: the training loop the package documents, written once over the interface's objects.

A :class:`Runner` is the package's loop, with the adapter's model, optimizer and GradScaler::

    compiled = cstorch.compile(model, backend)

    @cstorch.trace
    def train_step(features, labels):
        optimizer.zero_grad()
        loss = loss_fn(compiled(features), labels)
        cstorch.amp.optimizer_step(loss, optimizer, grad_scaler)   # without one: loss.backward()
        return loss                                                 #              optimizer.step()

    loader = cstorch.utils.data.DataLoader(input_fn)
    for batch in cstorch.utils.data.DataExecutor(loader, num_steps=steps, checkpoint_steps=N):
        loss = train_step(*batch)
        receive(loss)                             # a @cstorch.step_closure: the loss reaches the host
        save_checkpoint(step)                     # a @cstorch.checkpoint_closure calling cstorch.save

``cstorch.amp.optimizer_step`` (scale, backward, ``unscale_``, step, update, zero_grad) is the
package's one call for the GradScaler's loop; the loop of its separate calls (``scale``, ``step``,
``update``) fails in this release when ``step`` is not preceded by ``unscale_`` (grad_scaler.py:
433-441 unscales only optimizers still READY; see the triage). The GradScaler runs under the amp
emulation of backend.py; inside a DataExecutor the executor runs the step closures.

A step's output is yielded once the package has run the step's closures, which its executor does
when it is asked for the next batch, after it has taken that batch from the loader
(utils/data/data_executor.py:264-266): with the package's loop the batch of step k+1 is taken
before the loss of step k reaches the host.

Checkpoints hold the interface's sections (step, model, optimizer, grad_scaler, data, and rng for
dropout generators), written by ``cstorch.save`` (checkpoint.py). The data section is the loader's
state, which the package asks for on checkpoint steps through its ``RestartableDataLoader`` protocol
(:class:`_Input`). Resuming reads a checkpoint with ``cstorch.load``, restores the objects, gives the
loader its state (``DataLoader.load_state_dict``) and runs the remaining steps with a
``cstorch.utils.data.Schedule`` that keeps the checkpoints on the same steps of the whole run.
A finite dataset that runs out is iterated again by the executor; each pass repeats the first
pass's order (same seed), so a position within a pass restores exactly.

The CPU backend compiles nothing and programs no system: ``compiles``, ``artifact``, ``systems``
and ``job_log`` report ``Unsupported``.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import amp, backend, checkpoint, metrics
from csconform.adapters.cstorch.compiler import NO_COMPILER
from csconform.adapters.cstorch.data import INFINITE, DatasetIterator
from csconform.adapters.cstorch.executor import EMPTY_LOADER, CompiledModel
from csconform.adapters.cstorch.refusals import refusals
from csconform.errors import InvalidInputError, Unsupported
from csconform.interface.kit import runs
from csconform.interface.kit.checkpoint_sections import restore_training_state, training_state
from csconform.interface.kit.runs import StepOutput

_open_runs: weakref.WeakSet[Any] = weakref.WeakSet()


def close_open_runs() -> None:
    """End the runs a check left suspended, so that the backend leaves their executor."""
    for run in list(_open_runs):
        run.close()


class _Input:
    """The loader's iterable: the interface dataset's batches as tensors. It implements the
    package's ``RestartableDataLoader`` protocol, so its position goes into checkpoints."""

    def __init__(self, dataset: Any, seed_entropy: int) -> None:
        self.dataset = dataset
        self.seed_entropy = seed_entropy
        self.iterator = dataset.iterator(seed_entropy=seed_entropy)
        self.started = False

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor | None]]:
        if self.started:  # the executor iterates again: a new pass, in the same order
            self.iterator = self.dataset.iterator(seed_entropy=self.seed_entropy)
        self.started = True
        for features, labels in self.iterator:  # labels None: unlabelled data, passed on as None
            yield torch.as_tensor(np.asarray(features)), None if labels is None else torch.as_tensor(np.asarray(labels))

    def __len__(self) -> int:
        cardinality = getattr(self.dataset, "cardinality", lambda: INFINITE)()
        if cardinality == INFINITE:
            raise TypeError("the dataset repeats forever: give the number of steps")
        return int(cardinality)

    # --- cstorch.utils.data.RestartableDataLoader ----------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return dict(self.iterator.state())

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        self.iterator = DatasetIterator.restore(self.dataset, state_dict)
        self.seed_entropy = int(state_dict["seed_entropy"])
        self.started = False

    def aggregate_state_dict(self, worker_states: list[dict[str, Any]]) -> dict[str, Any]:
        return worker_states[0]  # one input worker on the CPU backend

    def deaggregate_state_dict(self, aggregated_state_dict: dict[str, Any], strict: bool = True) -> dict[str, Any]:
        return aggregated_state_dict


def _loader(source: _Input) -> Any:
    backend.cpu_backend()
    return cstorch.utils.data.DataLoader(lambda: source)


def _executor(loader: Any, num_steps: int | None, checkpoint_steps: Any) -> Any:
    with refusals({RuntimeError: InvalidInputError, ValueError: InvalidInputError, TypeError: InvalidInputError}):
        return cstorch.utils.data.DataExecutor(loader, num_steps=num_steps, checkpoint_steps=checkpoint_steps)


def _numpy(labels: torch.Tensor | None) -> np.ndarray | None:
    """The labels as the interface's loss functions take them (None for unlabelled data)."""
    return None if labels is None else labels.numpy()


def _next_batch(batches: Iterator[Any]) -> Any:
    """The executor's next batch, or None at the end of the run; an empty loader is refused."""
    try:
        return next(batches)
    except StopIteration:
        return None
    except RuntimeError as exc:
        if EMPTY_LOADER in str(exc):
            raise InvalidInputError(str(exc)) from exc
        raise


def _checkpoint_schedule(every: int | None, first: int, total: int) -> Any:
    """The executor's ``checkpoint_steps`` for steps ``first..total-1`` of a run of ``total`` steps."""
    if every is None or first == 0:
        return every  # the package's own cadence from the start of the run
    if not isinstance(every, int) or every < 1:
        return every  # the package refuses it
    remaining = total - first
    start = next(step for step in range(every - 1, total + every, every) if step >= first) - first
    start = min(start, remaining - 1)
    schedule = cstorch.utils.data.Schedule
    return schedule([schedule.Range(start=start, end=remaining, step=every, include_last=True)])


def _dropout_generators(model: torch.nn.Module) -> Iterator[tuple[str, torch.Generator]]:
    for name, module in model.named_modules():
        generator = getattr(module, "generator", None)
        if isinstance(generator, torch.Generator):
            yield name, generator


class Runner(runs.Runner):
    """The package's loop over one run (the kit's Runner checks and keeps the interface's arguments)."""

    def prepare(self) -> None:
        """The package's compiled model and traced steps of this run."""
        self.compiled = CompiledModel(self.model)
        self._train_step = cstorch.trace(self._step)
        self._eval_step = cstorch.trace(self._evaluation)

    # --- what the CPU backend does not have -----------------------------------------------------

    @property
    def compiles(self) -> int:
        raise Unsupported(NO_COMPILER)

    @property
    def artifact(self) -> Any:
        raise Unsupported(NO_COMPILER)

    @property
    def systems(self) -> list[Any]:
        raise Unsupported(NO_COMPILER)

    @property
    def job_log(self) -> list[Any]:
        raise Unsupported("a run on the CPU backend has no chief, worker or system nodes to log")

    # --- training ---------------------------------------------------------------------------------

    def _step(self, features: torch.Tensor, labels: torch.Tensor | None) -> Any:
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.compiled(features), _numpy(labels))
        if self.grad_scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            amp.optimizer_step(loss, self.optimizer, self.grad_scaler)
        return loss

    def train(
        self, dataset: Any, steps: int, resume_from: str | Path | None = None, data_seed: int | None = None
    ) -> Iterator[StepOutput]:
        self.check_training(steps)
        source = _Input(dataset, secrets.randbits(128) if data_seed is None else int(data_seed))
        loader = _loader(source)
        if resume_from is not None:
            self._restore(resume_from, loader)
        run = self._train_loop(loader, steps)
        _open_runs.add(run)
        return run

    def _train_loop(self, loader: Any, steps: int) -> Iterator[StepOutput]:
        first = self.steps_completed
        if first >= steps:
            return
        executor = _executor(loader, steps - first, _checkpoint_schedule(self.checkpoint_steps, first, steps))
        received: dict[int, dict[str, Any]] = {}

        @cstorch.step_closure
        def receive(step: int, loss: torch.Tensor) -> None:
            received[step] = {
                "loss": float(np.float32(loss.item())),
                "loss_scale": None if self.grad_scaler is None else float(self.grad_scaler.get_scale()),
                "global_step": int(self.optimizer.global_step),
            }

        @cstorch.checkpoint_closure
        def save_checkpoint(step: int) -> None:
            assert self.checkpoint_dir is not None
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            path = checkpoint.save(self.checkpoint_dir / f"checkpoint_{step}.mdl", self.state(step, loader))
            received[step]["checkpoint"] = path
            self.last_checkpoint_step = step

        batches = iter(executor)
        try:
            batch = _next_batch(batches)
            while batch is not None:
                step = first + executor.iteration
                loss = self._train_step(*batch)
                self.steps_completed = step + 1
                receive(step, loss.torch)
                if self.checkpoint_steps:
                    save_checkpoint(step)
                batch = _next_batch(batches)  # runs this step's closures, then takes the next batch
                record = received.pop(step)
                yield StepOutput(step=step, checkpoint=record.pop("checkpoint", None), **record)
        finally:
            batches.close()

    # --- eval ------------------------------------------------------------------------------------------

    def _evaluation(self, features: torch.Tensor, labels: torch.Tensor | None, metric: Any) -> None:
        with torch.no_grad():
            prediction = self.compiled(features)
            loss = self.loss_fn(prediction, _numpy(labels))
        if isinstance(metric, metrics.Mean):
            metric.update(float(loss))
        else:
            metric.update(prediction, _numpy(labels))

    def evaluate(self, dataset: Any, metric: Any = None, steps: int | None = None) -> Any:
        """The metric's final value over ``steps`` batches (one pass over a finite dataset by default)."""
        metric = metric if metric is not None else metrics.Mean()
        loader = _loader(_Input(dataset, secrets.randbits(128)))
        executor = _executor(loader, steps, None)
        self.model.eval()
        try:
            for features, labels in executor:
                self._eval_step(features, labels, metric)
        finally:
            self.model.train()
        return metrics.final_value(metric.compute())

    # --- checkpoints ----------------------------------------------------------------------------------

    def state(self, step: int, loader: Any) -> dict[str, Any]:
        rng = {name: g.get_state().numpy() for name, g in _dropout_generators(self.compiled.torch)}
        return training_state(step, self.model, self.optimizer, self.grad_scaler, loader.state_dict(), rng)

    def _restore(self, path: str | Path, loader: Any) -> None:
        saved = checkpoint.load(path)

        def restore_the_rest(saved: Mapping[str, Any]) -> None:
            rng = saved.get("rng", {})
            for name, generator in _dropout_generators(self.compiled.torch):
                if name in rng:
                    generator.set_state(torch.from_numpy(np.asarray(rng[name], dtype=np.uint8)))
            loader.load_state_dict(saved["data"])  # the package's DataLoader hands it to _Input

        restore_training_state(path, saved, self.model, self.optimizer, self.grad_scaler, restore_the_rest)
        self.steps_completed = int(saved["step"]) + 1
        self.last_checkpoint_step = int(saved["step"])

    def fetch_weights(self) -> dict[str, np.ndarray]:
        """Copies of the weights: a CPU run can read them after any step."""
        return self.model.state_dict()
