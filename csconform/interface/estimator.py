"""Capability ``estimator``: the CerebrasEstimator contracts of estimator-limitations (TensorFlow flavour)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class SessionRunHook(Protocol):
    def begin(self) -> None: ...

    def before_run(self, step: int) -> None: ...

    def after_run(self, step: int, loss: float) -> None: ...

    def end(self) -> None: ...


class EstimatorSpec(Protocol):
    def __init__(
        self,
        mode: str,
        loss: Any = None,
        train_op: Callable[[], Any] | None = None,
        predictions: Any = None,
        eval_metric_ops: Mapping[str, Any] | None = None,
        training_hooks: Sequence[Any] = (),
        evaluation_hooks: Sequence[Any] = (),
    ) -> None: ...


class CSRunConfig(Protocol):
    """The run configuration; some TensorFlow parameters are refused on the CS system."""

    def __init__(
        self,
        model_dir: str | None = None,
        cs_ip: str = "cs-0",
        save_checkpoint_steps: int | None = None,
    ) -> None: ...


class CerebrasEstimator(Protocol):
    def __init__(
        self,
        model_fn: Callable[..., Any],
        config: Any = None,
        params: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None: ...

    def train(self, input_fn: Callable[..., Any], steps: int, hooks: Sequence[Any] = ()) -> Any: ...

    def evaluate(self, input_fn: Callable[..., Any], steps: int | None = None) -> Mapping[str, Any]: ...

    def compile(self, input_fn: Callable[..., Any], validate_only: bool = False, mode: str = "train") -> Any: ...


class EstimatorModule(Protocol):
    """``engine.estimator``"""

    CerebrasEstimator: type[CerebrasEstimator]
    EstimatorSpec: type[EstimatorSpec]
    CSRunConfig: type[CSRunConfig]
    SessionRunHook: type[SessionRunHook]
