"""The PyTorch-flavoured runner: the training loop of pipelined-execution on one system or a cluster.

A :class:`Runner` owns one run. ``train(dataset, steps)`` is a generator: every step pulls the next
batch only when the previous one is done (the input layer requests the next minibatch), traces the
step, compiles and programs the system on the first step, runs forward and backward in mixed
precision with the GradScaler's loss scale, applies the optimizer update (whose learning rate is a
function of its ``global_step``; a step the GradScaler skipped at its minimum scale stops the run
with ``NonRecoverableNaNError``), and yields a :class:`StepOutput` with the step's loss the moment it
is computed, so a user can watch losses stream in live. With ``checkpoint_steps=N`` it saves after
steps N-1, 2N-1, ... and after the last step (0-based step indices); on the CS system weights can
be fetched only on those steps.

On the CS system every step's graph must equal the programmed one (pytorch-limitations#Static Graphs),
the system is programmed once, "train_and_eval" is refused, and a pipelined model must fit the
wafer. On the cpu target a changed graph is recompiled, and only then.

pipelined-execution#Layer pipelined mode names the machines of a job: it is launched from the chief
node, compiled there, its batches are prepared on a worker node and streamed to the system, and the
losses and checkpoints come back to the chief. ``Runner.job_log`` records each of those events with
the node it ran on.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from csconform.arguments import check_callable, check_choice, check_integer, check_type
from csconform.engine import checkpoint, compiler, context, graph, metrics
from csconform.engine.amp import GradScaler
from csconform.engine.artifact import CompiledArtifact
from csconform.engine.data import Dataset, DatasetIterator
from csconform.engine.execution import (
    PipelinedExecutor,
    WeightStreamingExecutor,
    check_pipelined_fits,
    check_weight_streaming_fits,
    footprint_of,
)
from csconform.engine.nn.module import Module
from csconform.engine.optim.optimizers import Optimizer
from csconform.engine.system import System
from csconform.errors import (
    CheckpointError,
    ExecutionModeError,
    InvalidInputError,
    NonRecoverableNaNError,
    WeightFetchError,
)
from csconform.interface.kit import runs
from csconform.interface.kit.checkpoint_sections import saved_optimizer_state, training_state
from csconform.interface.kit.runs import StepOutput

CHIEF_NODE = "chief"
MAX_SYSTEMS = 2048
"""Most systems a run may span (the largest CS-3 cluster announced)."""
WORKER_NODE = "worker-0"


@dataclass(frozen=True)
class JobEvent:
    """One thing a job did, and where: ``node`` is the chief, a worker, or a system id."""

    node: str
    action: str  # "launch" | "compile" | "program" | "batch" | "step" | "loss" | "checkpoint"


def _loss_name(loss_fn: Callable[..., Any]) -> str:
    return str(getattr(loss_fn, "__name__", type(loss_fn).__name__)).lower()


class Runner(runs.Runner):
    """A run on the engine's systems: the interface's arguments (checked by the kit's Runner) and the
    engine's own, which say how many systems of which kind the run spans and how it executes."""

    @staticmethod
    def check_mode(mode: str) -> str:
        """The interface's modes, less "train_and_eval" on the CS system (the compiler's check)."""
        return compiler.check_mode(mode)

    def __init__(
        self,
        model: Any,
        loss_fn: Callable[..., Any],
        optimizer: Any = None,
        *,
        grad_scaler: Any = None,
        mode: str = "train",
        execution: str = "pipelined",
        num_systems: int = 1,
        installation: str = "appliance",
        wafer: str = "WSE-2",
        system_ids: list[str] | None = None,
        checkpoint_steps: int | None = None,
        checkpoint_dir: str | Path | None = None,
        model_performance: bool = False,
    ) -> None:
        super().__init__(
            model,
            loss_fn,
            optimizer,
            grad_scaler=grad_scaler,
            mode=mode,
            checkpoint_steps=checkpoint_steps,
            checkpoint_dir=checkpoint_dir,
        )
        check_type("model", model, Module, "a Module (engine.nn)")
        check_callable("loss_fn", loss_fn)
        if optimizer is not None:
            check_type("optimizer", optimizer, Optimizer, "an Optimizer (engine.optim)")
        if grad_scaler is not None:
            check_type("grad_scaler", grad_scaler, GradScaler, "a GradScaler (engine.amp)")
        check_choice("execution", execution, ("pipelined", "weight_streaming"))
        check_integer("num_systems", num_systems, minimum=1, maximum=MAX_SYSTEMS)
        if system_ids is not None and not (
            isinstance(system_ids, list) and all(isinstance(i, str) and i for i in system_ids)
        ):
            raise InvalidInputError(f"system_ids must be a list of non-empty strings, got {system_ids!r}")
        if checkpoint_steps is not None:
            check_integer("checkpoint_steps", checkpoint_steps, minimum=1)
        self.model_performance = model_performance
        ids = system_ids or [f"cs-{index}" for index in range(num_systems)]
        if len(ids) != num_systems:
            raise InvalidInputError(f"{num_systems} systems need {num_systems} system ids, got {len(ids)}")
        self.systems = [System(system_id, wafer=wafer, installation=installation) for system_id in ids]
        self.executor = self._make_executor(execution)
        self.artifact: CompiledArtifact | None = None
        self.compiles = 0
        self.job_log: list[JobEvent] = []

    def _make_executor(self, execution: str) -> PipelinedExecutor | WeightStreamingExecutor:
        if execution == "pipelined":
            if len(self.systems) != 1:
                raise ExecutionModeError("pipelined execution runs the whole model on one system; use num_systems=1")
            return PipelinedExecutor(self.model, self.systems[0])
        if execution == "weight_streaming":
            return WeightStreamingExecutor(self.model, self.systems)
        raise InvalidInputError(f"unknown execution mode {execution!r}; known: pipelined, weight_streaming")

    # --- compile and program --------------------------------------------------------------------

    def _step_graph(self, step: Callable[[], Any]) -> tuple[graph.Graph, Any]:
        with graph.module_calls_recorded(self.model):
            return graph.trace(step)

    def _recorded_loss(self, prediction: Any, labels: Any) -> Any:
        graph.record(_loss_name(self.loss_fn), prediction, *([] if labels is None else [labels]))
        return self.loss_fn(prediction, labels)

    def _ensure_programmed(self, step_graph: graph.Graph, mode: str, features: Any) -> None:
        """Compile and program on the first step; afterwards only check (cs) or recompile (cpu)."""
        if not self.systems[0].check_step_graph(step_graph):
            return
        batch_size = len(features)
        footprint = footprint_of(self.model, step_graph, batch_size, self.optimizer)
        if isinstance(self.executor, PipelinedExecutor):
            check_pipelined_fits(footprint, batch_size, self.systems[0])
        else:
            check_weight_streaming_fits(footprint, batch_size // len(self.systems), self.systems[0])
        self.job_log.append(JobEvent(CHIEF_NODE, "compile"))
        artifact = compiler.compile_graph(
            step_graph,
            mode=mode,
            system=self.systems[0],
            performance=self.model_performance,
            execution=self.executor.mode,
            systems=len(self.systems),
            learning_rate_schedules=self._learning_rate_schedules(mode),
        )
        assert isinstance(artifact, CompiledArtifact)
        for system in self.systems[1:]:  # the same program, bound to each system of the cluster
            system.load(dataclasses.replace(artifact, system_id=system.system_id))
        self.job_log += [JobEvent(system.system_id, "program") for system in self.systems]
        self.artifact = artifact
        self.compiles += 1

    def _learning_rate_schedules(self, mode: str) -> tuple[Any, ...]:
        """The schedule of every param group, handed to the compiler for a training program."""
        if mode != "train" or self.optimizer is None:
            return ()
        return tuple(group["lr"] for group in self.optimizer.param_groups)

    # --- training --------------------------------------------------------------------------------

    def _train_step(self, features: Any, labels: Any) -> tuple[float, graph.Graph]:
        scale = 1.0 if self.grad_scaler is None else float(self.grad_scaler.get_scale())

        def step() -> float:
            self.optimizer.zero_grad()
            return self.executor.forward_backward(features, labels, self._recorded_loss, np.float32(scale))

        step_graph, loss = self._step_graph(step)
        return loss, step_graph

    def _apply_update(self, step: int) -> None:
        if self.grad_scaler is None:
            self.executor.apply_update(self.optimizer.step)
            return
        was_at_minimum = self.grad_scaler.is_at_minimum()
        global_step_before = int(self.optimizer.global_step)
        self.executor.apply_update(lambda: self.grad_scaler.step(self.optimizer))
        self.grad_scaler.update()
        skipped = int(self.optimizer.global_step) == global_step_before
        if skipped and was_at_minimum:
            # The GradScaler only clamps at its minimum; giving up is the training loop's call
            # (public-facts#GradScaler).
            raise NonRecoverableNaNError(
                f"step {step}: the gradients are non-finite although the loss scale is already at its minimum "
                f"({self.grad_scaler.min_loss_scale}); lowering it cannot help, so training cannot recover"
            )

    def train(
        self,
        dataset: Dataset,
        steps: int,
        resume_from: str | Path | None = None,
        data_seed: int | None = None,
    ) -> Iterator[StepOutput]:
        """Run until ``steps`` steps are complete, yielding each step's output as it happens.

        ``data_seed`` fixes the random stream of the dataset's unseeded shuffles (fresh entropy
        otherwise); a resumed run takes both seed and position from the checkpoint.
        """
        self.check_training(steps)
        if not callable(getattr(dataset, "iterator", None)):
            raise InvalidInputError(f"dataset must be a Dataset (engine.data), got {type(dataset).__name__}")
        self.job_log.append(JobEvent(CHIEF_NODE, "launch"))
        if resume_from is None:
            iterator = dataset.iterator(seed_entropy=data_seed)
        else:
            iterator = self.restore(resume_from, dataset)
        return self._train_loop(iterator, steps)

    def _train_loop(self, iterator: DatasetIterator, steps: int) -> Iterator[StepOutput]:
        while self.steps_completed < steps:
            step = self.steps_completed
            try:
                features, labels = next(iterator)
            except StopIteration:
                return
            self.job_log.append(JobEvent(WORKER_NODE, "batch"))
            # The graph is checked before anything is applied, so a refused step changes nothing.
            loss, step_graph = self._train_step(features, labels)
            self._ensure_programmed(step_graph, "train", features)
            self._apply_update(step)
            self.job_log += [JobEvent(system.system_id, "step") for system in self.systems]
            self.steps_completed += 1
            at_checkpoint = checkpoint.is_checkpoint_step(step, steps, self.checkpoint_steps)
            saved = self.save_checkpoint(step, iterator) if at_checkpoint else None
            self.job_log.append(JobEvent(CHIEF_NODE, "loss"))
            yield StepOutput(
                step=step,
                loss=loss,
                loss_scale=None if self.grad_scaler is None else float(self.grad_scaler.get_scale()),
                global_step=int(self.optimizer.global_step),
                checkpoint=saved,
            )

    # --- eval ---------------------------------------------------------------------------------------

    def evaluate(self, dataset: Dataset, metric: metrics.Metric | None = None, steps: int | None = None) -> Any:
        """Run the eval graph over ``dataset``; return the metric's single final value (mean loss by default)."""
        if self.mode == "train" and context.on_cs():
            raise ExecutionModeError(
                'this run programmed the fabric for "train"; it cannot be reprogrammed for eval in the same run'
            )
        self.job_log.append(JobEvent(CHIEF_NODE, "launch"))
        metric = metric if metric is not None else metrics.Mean()
        self.model.eval()
        try:
            for index, (features, labels) in enumerate(dataset):
                if steps is not None and index >= steps:
                    break
                step_graph, (prediction, loss) = self._step_graph(functools.partial(self._eval_step, features, labels))
                self._ensure_programmed(step_graph, "eval", features)
                if isinstance(metric, metrics.Mean):
                    metric.update(loss)
                else:
                    metric.update(prediction, labels)
        finally:
            self.model.train()
        return metrics.check_result(metric.name, metric.compute())

    def _eval_step(self, features: Any, labels: Any) -> tuple[Any, float]:
        prediction = self.model(features)
        return prediction, float(self._recorded_loss(prediction, labels))

    # --- checkpoints --------------------------------------------------------------------------------

    def state(self, step: int, iterator: DatasetIterator) -> dict[str, Any]:
        """Everything a bit-exact resume needs, by section (see checkpoint.REQUIRED_SECTIONS)."""
        rng = _module_rng_states(self.model)
        return training_state(step, self.model, self.optimizer, self.grad_scaler, iterator.state(), rng)

    def save_checkpoint(self, step: int, iterator: DatasetIterator) -> Path:
        assert self.checkpoint_dir is not None
        path = checkpoint.save(checkpoint.path_for_step(self.checkpoint_dir, step), self.state(step, iterator))
        self.job_log.append(JobEvent(CHIEF_NODE, "checkpoint"))
        self.last_checkpoint_step = step
        return path

    def restore(self, path: str | Path, dataset: Dataset) -> DatasetIterator:
        """Load a verified checkpoint into this run and return the data iterator positioned after it.

        All or nothing: every section is checked against this run (weights, optimizer state, loss
        scaler, random generators, data position, step) before any of them is applied, so a refused
        checkpoint leaves the run exactly as it was.
        """
        saved = checkpoint.load(path)
        try:
            step = check_integer("step", saved["step"], minimum=0)
            weights = self.model.checked_weights(saved["model"])
            optimizer_state = self.optimizer._checked_state(saved_optimizer_state(saved, self.optimizer))
            if self.grad_scaler is not None:  # its load_state_dict checks before it applies: try it on a copy
                copy.deepcopy(self.grad_scaler).load_state_dict(saved["grad_scaler"])
            generator_states = _checked_module_rngs(self.model, saved.get("rng", {}))
            iterator = DatasetIterator.restore(dataset, saved["data"])
        except (InvalidInputError, CheckpointError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"checkpoint {path} does not match this run: {exc}") from exc
        # everything checked: nothing below can refuse
        self.model.assign_weights(weights)
        self.optimizer._apply_state(*optimizer_state)
        if self.grad_scaler is not None:
            self.grad_scaler.load_state_dict(saved["grad_scaler"])
        for generator, state in generator_states:
            generator.bit_generator.state = state
        self.steps_completed = int(step) + 1
        self.last_checkpoint_step = int(step)
        return iterator

    def fetch_weights(self) -> dict[str, np.ndarray]:
        """Copies of the weights; on the CS system only right after a checkpoint step."""
        latest = self.steps_completed - 1
        if context.on_cs() and self.steps_completed and self.last_checkpoint_step != latest:
            raise WeightFetchError(
                f"weights can be fetched from the CS system only on checkpoint steps; step {latest} is not one "
                f"(checkpoint_steps={self.checkpoint_steps})"
            )
        return self.model.state_dict()


def _generators(model: Any, prefix: str = "") -> Iterator[tuple[str, np.random.Generator]]:
    """Random generators kept by modules (e.g. dropout masks), by dotted name."""
    for name, value in vars(model).items():
        if isinstance(value, np.random.Generator):
            yield prefix + name, value
    for name, child in model.named_children():
        yield from _generators(child, f"{prefix}{name}.")


def _module_rng_states(model: Any) -> dict[str, Any]:
    return {name: generator.bit_generator.state for name, generator in _generators(model)}


def _checked_module_rngs(model: Any, states: Any) -> list[tuple[np.random.Generator, Any]]:
    """(generator, saved state) of every module generator the checkpoint has a state for, each state
    tried on a fresh generator of the same kind first (a bad one raises there, not on the model's)."""
    if not isinstance(states, dict):
        raise InvalidInputError(f"rng must be a mapping of generator states, got {type(states).__name__}")
    checked = []
    for name, generator in _generators(model):
        if name in states:
            type(generator.bit_generator)().state = states[name]
            checked.append((generator, states[name]))
    return checked
