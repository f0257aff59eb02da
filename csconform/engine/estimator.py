"""The Estimator flavour: a small model of the CerebrasEstimator and its documented limitations.

``model_fn(features, labels, mode, params)`` returns an :class:`EstimatorSpec` whose ``loss`` is the
step's loss value and whose ``train_op`` (a zero-argument callable) applies the update; the model's
weights live wherever ``model_fn`` keeps them. ``input_fn(params)`` returns a
:class:`~csconform.engine.data.Dataset` of ``(features, labels)`` batches. ``train`` runs an
explicit number of steps; ``compile`` validates or fully compiles without a system.

On the CS system (estimator-limitations#Limitations of the CerebrasEstimator) the estimator refuses:
user hooks, ``eval_metric_ops``, input functions that take anything but one ``params`` dictionary or
return anything but a Dataset of (features tensor, labels tensor or None), datasets whose batch size
is not fixed (``drop_remainder=True``), a finite ``repeat`` that runs out before ``steps``, several
input workers that would shuffle identically, and the configuration problems checked by
:class:`~csconform.engine.estimator_config.CSRunConfig`. It also keeps the graph static and binds a
compiled artifact to its system. On the cpu target every feature is accepted.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from csconform.arguments import check_callable, check_integer, check_type
from csconform.engine import compiler, context, graph
from csconform.engine.artifact import CompiledArtifact, ValidationReport
from csconform.engine.data import INFINITE, Dataset, DatasetIterator
from csconform.engine.estimator_config import CSRunConfig
from csconform.engine.system import System
from csconform.errors import InvalidInputError, UnsupportedTensorFlowError

__all__ = ["CSRunConfig", "CerebrasEstimator", "EstimatorSpec", "ModeKeys", "SessionRunHook", "TrainResult"]

EVAL_METRIC_OPS_MESSAGE = "[Unsupported TensorFlow] Detected unsupported eval_metric_ops in CS system training run."
INCONSISTENT_BATCH_MESSAGE = (
    "[Unsupported TensorFlow] Inconsistent batch sizes detected. To ensure a fixed batch size across "
    "all steps, set `drop_remainder=True` when batching your Dataset in the input function."
)
RETURN_DATASET_PREFIX = "[Unsupported TensorFlow] Input function must return a"
RETURN_DATASET_MESSAGE = (
    RETURN_DATASET_PREFIX + " Dataset whose elements are (features, labels) pairs, with features a tensor "
    "and labels a tensor or None"
)
"""The documents cut this message off after "must return a"; the rest of the sentence is ours."""


class ModeKeys:
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class SessionRunHook:
    """A user hook (TensorFlow style). Runs on cpu; refused on the CS system."""

    def begin(self) -> None:
        """Called once before the first step."""

    def before_run(self, step: int) -> None:
        """Called before each step."""

    def after_run(self, step: int, loss: float) -> None:
        """Called after each step with its loss."""

    def end(self) -> None:
        """Called once after the last step."""


@dataclass
class EstimatorSpec:
    mode: str
    loss: Any = None
    train_op: Callable[[], Any] | None = None
    predictions: Any = None
    eval_metric_ops: Mapping[str, Any] | None = None
    training_hooks: Sequence[SessionRunHook] = ()
    evaluation_hooks: Sequence[SessionRunHook] = ()


@dataclass
class TrainResult:
    losses: list[float] = field(default_factory=list)
    steps_run: int = 0


def _metric_value(metric: Any) -> Any:
    """An eval metric op is a Metric-like object (``compute()``) or a plain final value."""
    return metric.compute() if hasattr(metric, "compute") else metric


class CerebrasEstimator:
    def __init__(
        self,
        model_fn: Callable[..., EstimatorSpec],
        config: CSRunConfig | None = None,
        params: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.model_fn = check_callable("model_fn", model_fn)
        if config is not None:
            check_type("config", config, CSRunConfig, "a CSRunConfig")
        self.config = config if config is not None else CSRunConfig()
        self.params: Any = {} if params is None else params
        self.env = env
        self.system = System(system_id=self.config.cs_ip)
        self.global_step = 0

    # --- public API --------------------------------------------------------------------------------

    def train(
        self,
        input_fn: Callable[..., Any],
        steps: int,
        hooks: Sequence[SessionRunHook] = (),
        artifact: CompiledArtifact | None = None,
        on_loss: Callable[[int, float], None] | None = None,
    ) -> TrainResult:
        """Train for exactly ``steps`` steps (fewer only on cpu, if the input runs out).

        ``on_loss(global_step, loss)`` receives every step's loss on the host as soon as it is
        computed (the loss stream of pipelined-execution#Layer pipelined mode); unlike a user hook it
        is allowed on the CS system.
        """
        check_integer("steps", steps, minimum=1)
        self.config.check_for_system(self.env)
        self.check_hooks(hooks)
        datasets = self.build_input(input_fn, ModeKeys.TRAIN)
        self.check_fixed_batch_size(datasets[0])
        self.check_enough_data(datasets, steps)
        iterators = self.worker_iterators(datasets)
        result = TrainResult()
        hooks = list(hooks)
        for hook in hooks:
            hook.begin()
        for step in range(steps):
            try:
                features, labels = features_and_labels(next(iterators[step % len(iterators)]))
            except StopIteration:
                break
            for hook in hooks:
                hook.before_run(self.global_step)
            spec = self.run_step(features, labels, ModeKeys.TRAIN, artifact)
            if spec.train_op is not None:
                spec.train_op()
            loss = float(np.asarray(spec.loss))
            result.losses.append(loss)
            result.steps_run += 1
            if on_loss is not None:
                on_loss(self.global_step, loss)
            for hook in [*hooks, *spec.training_hooks]:
                hook.after_run(self.global_step, loss)
            self.global_step += 1
        for hook in hooks:
            hook.end()
        return result

    def evaluate(self, input_fn: Callable[..., Any], steps: int | None = None) -> dict[str, Any]:
        """Mean loss over the eval batches, plus the eval metric ops (cpu only)."""
        self.config.check_for_system(self.env)
        datasets = self.build_input(input_fn, ModeKeys.EVAL)
        self.check_fixed_batch_size(datasets[0])
        losses = []
        spec: EstimatorSpec | None = None
        for index, element in enumerate(datasets[0].iterator()):
            features, labels = features_and_labels(element)
            if steps is not None and index >= steps:
                break
            spec = self.run_step(features, labels, ModeKeys.EVAL, None)
            losses.append(float(np.asarray(spec.loss)))
        if spec is None:
            raise InvalidInputError("evaluation saw no batches")
        results: dict[str, Any] = {"loss": float(np.mean(losses)), "global_step": self.global_step}
        for name, metric in (spec.eval_metric_ops or {}).items():
            results[name] = _metric_value(metric)
        return results

    def compile(
        self, input_fn: Callable[..., Any], validate_only: bool = False, mode: str = ModeKeys.TRAIN
    ) -> ValidationReport | CompiledArtifact:
        """Validate (``validate_only``) or fully compile the model for ``config.cs_ip`` without a system."""
        datasets = self.build_input(input_fn, mode if mode != "train_and_eval" else ModeKeys.TRAIN)
        self.check_fixed_batch_size(datasets[0])
        features, labels = features_and_labels(next(datasets[0].iterator()))
        step_graph, spec = self.trace_model_fn(features, labels, mode)
        self.check_spec(spec)
        return compiler.compile_graph(
            step_graph, mode=mode, system_id=self.config.cs_ip, validate_only=validate_only, compile_only=True
        )

    # --- one step ----------------------------------------------------------------------------------

    def trace_model_fn(self, features: Any, labels: Any, mode: str) -> tuple[graph.Graph, EstimatorSpec]:
        def step() -> EstimatorSpec:
            graph.record("input", features, *([] if labels is None else [labels]))
            return self.model_fn(features, labels, mode, self.params)

        step_graph, spec = graph.trace(step)
        if not isinstance(spec, EstimatorSpec):
            raise InvalidInputError(f"model_fn must return an EstimatorSpec, got {type(spec).__name__}")
        return step_graph, spec

    def run_step(self, features: Any, labels: Any, mode: str, artifact: CompiledArtifact | None) -> EstimatorSpec:
        step_graph, spec = self.trace_model_fn(features, labels, mode)
        self.check_spec(spec)
        if self.system.check_step_graph(step_graph):
            if artifact is not None and self.system.program is None:
                self.system.load(artifact)
                self.system.check_step_graph(step_graph)
            else:
                compiler.compile_graph(step_graph, mode=mode, system=self.system)
        return spec

    # --- the CS-system checks, one per documented limitation ------------------------------------------

    def check_spec(self, spec: EstimatorSpec) -> None:
        self.check_eval_metric_ops(spec)
        self.check_hooks([*spec.training_hooks, *spec.evaluation_hooks])

    def check_eval_metric_ops(self, spec: EstimatorSpec) -> None:
        if context.on_cs() and spec.eval_metric_ops:
            raise UnsupportedTensorFlowError(EVAL_METRIC_OPS_MESSAGE)

    def check_hooks(self, hooks: Sequence[SessionRunHook]) -> None:
        if context.on_cs() and hooks:
            names = ", ".join(type(hook).__name__ for hook in hooks)
            raise UnsupportedTensorFlowError(
                f"user-defined hooks ({names}) are not supported on the CS system: a hook tried to access a "
                "tensor that is not initialized"
            )

    def call_input_fn(self, input_fn: Callable[..., Any], mode: str) -> Any:
        if context.on_cs():
            self.check_input_fn_signature(input_fn)
            return input_fn(self.params)
        # TensorFlow passes whichever of params, mode and config the input function names.
        available = {"params": self.params, "mode": mode, "config": self.config}
        parameters = inspect.signature(input_fn).parameters
        return input_fn(**{name: available[name] for name in parameters if name in available})

    def check_input_fn_signature(self, input_fn: Callable[..., Any]) -> None:
        parameters = list(inspect.signature(input_fn).parameters.values())
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if len(parameters) != 1 or parameters[0].kind not in positional:
            raise UnsupportedTensorFlowError(
                "[Unsupported TensorFlow] The input function must take exactly one parameter, the params "
                f"dictionary; got parameters ({', '.join(p.name for p in parameters)})"
            )
        if not isinstance(self.params, dict):
            raise UnsupportedTensorFlowError(
                f"[Unsupported TensorFlow] params must be a dictionary, got {type(self.params).__name__}"
            )

    def build_input(self, input_fn: Callable[..., Any], mode: str) -> list[Dataset]:
        """One dataset per input worker, each from its own call of the input function."""
        datasets = [self.as_dataset(self.call_input_fn(input_fn, mode)) for _ in range(self.config.num_input_workers)]
        self.check_workers_shuffle_differently(datasets)
        return datasets

    def as_dataset(self, returned: Any) -> Dataset:
        if isinstance(returned, Dataset):
            self.check_element_structure(returned)
            return returned
        if context.on_cs():
            raise UnsupportedTensorFlowError(f"{RETURN_DATASET_MESSAGE}; got {type(returned).__name__}")
        # TensorFlow also accepts a (features, labels) tuple: one batch, used for every step.
        if isinstance(returned, tuple) and len(returned) == 2:
            features, labels = returned
            one_batch = (np.asarray(features)[None], None if labels is None else np.asarray(labels)[None])
            return Dataset.from_tensor_slices(one_batch).repeat()
        raise InvalidInputError(f"the input function returned {type(returned).__name__}, not a Dataset")

    def check_element_structure(self, dataset: Dataset) -> None:
        if not context.on_cs():
            return
        try:
            element = next(dataset.iterator())
        except StopIteration:
            raise UnsupportedTensorFlowError(f"{RETURN_DATASET_MESSAGE}; the Dataset is empty") from None
        valid = (
            isinstance(element, tuple)
            and len(element) == 2
            and isinstance(element[0], np.ndarray)
            and (element[1] is None or isinstance(element[1], np.ndarray))
        )
        if not valid:
            raise UnsupportedTensorFlowError(f"{RETURN_DATASET_MESSAGE}; got an element of type {_describe(element)}")

    def check_fixed_batch_size(self, dataset: Dataset) -> None:
        if context.on_cs() and not dataset.batch_size_is_static():
            raise UnsupportedTensorFlowError(INCONSISTENT_BATCH_MESSAGE)

    def check_enough_data(self, datasets: list[Dataset], steps: int) -> None:
        batches_per_worker = datasets[0].cardinality()
        if not context.on_cs() or batches_per_worker == INFINITE:
            return
        available = batches_per_worker * len(datasets)
        if available < steps:
            raise UnsupportedTensorFlowError(
                f"[Unsupported TensorFlow] the input provides only {available} batches but train was asked for "
                f"{steps} steps; use repeat() with the default count=None so the input never runs out"
            )

    def check_workers_shuffle_differently(self, datasets: list[Dataset]) -> None:
        if not context.on_cs() or len(datasets) < 2:
            return
        if any(not d.shuffles() or d.has_deterministic_shuffle() for d in datasets):
            raise UnsupportedTensorFlowError(
                f"[Unsupported TensorFlow] {len(datasets)} input workers would send identical data: each worker "
                "must shuffle its data differently, so shuffle without a deterministic random seed"
            )

    def worker_iterators(self, datasets: list[Dataset]) -> list[DatasetIterator]:
        return [dataset.iterator() for dataset in datasets]


def features_and_labels(element: Any) -> tuple[Any, Any]:
    """Split a Dataset element; an element that is not a pair is features alone (cpu accepts that)."""
    if isinstance(element, tuple) and len(element) == 2:
        return element[0], element[1]
    return element, None


def _describe(element: Any) -> str:
    if isinstance(element, tuple):
        return "(" + ", ".join(type(e).__name__ for e in element) + ")"
    return type(element).__name__
