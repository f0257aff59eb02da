"""The PyTorch execution API (``compile``, ``trace``, ``DataExecutor``, step and checkpoint closures).

A user of a Cerebras-compatible PyTorch runtime writes the training loop with these names (the
vendor's public API; specs/executor.yaml). The reference engine gives them the documented
behaviour on its own pieces:

* a :class:`DataExecutor` run is ``num_steps`` steps over a :class:`DataLoader`, iterating it again
  from the start whenever it runs out; with ``checkpoint_steps=N`` its checkpoint steps are those
  of the runner (:func:`csconform.engine.checkpoint.checkpoint_steps_for`: N-1, 2N-1, ..., last);
* closures are queued and run at the end of the step they were called in, in order, on copies of
  their array arguments taken at the call; a checkpoint closure runs only on checkpoint steps, and
  one called outside a run waits for the next run and runs as it starts (an initial checkpoint);
* every step may use one compiled model.

``trace`` runs the step as it is, like the vendor's CPU backend does: the engine's own static-graph
checks belong to its runner (:mod:`csconform.engine.runner`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from csconform.arguments import check_integer
from csconform.engine import context
from csconform.engine.checkpoint import is_checkpoint_step
from csconform.errors import ExecutionContextError, InvalidInputError
from csconform.interface.kit.modules import CompiledModelView

BEFORE_FIRST_STEP = -1
"""The iteration of a run that has started but not yet reached its first step."""


@dataclass
class _Closure:
    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    checkpoint_only: bool


@dataclass
class _State:
    runs: list[DataExecutor] = field(default_factory=list)
    queued: list[_Closure] = field(default_factory=list)
    step_model: Any = None


_state = _State()


@context.on_reset
def _forget() -> None:
    _state.runs.clear()
    _state.queued.clear()
    _state.step_model = None


class DataLoader:
    """``input_fn(*args, **kwargs)`` gives the batches; it is called once, and iterated per pass."""

    def __init__(self, input_fn: Callable[..., Iterable[Any]], *args: Any, **kwargs: Any) -> None:
        if not callable(input_fn):
            raise InvalidInputError("DataLoader needs a callable that returns an iterable of batches")
        self._input_fn = functools.partial(input_fn, *args, **kwargs)
        self._source: Iterable[Any] | None = None

    @property
    def source(self) -> Iterable[Any]:
        if self._source is None:
            source = self._input_fn()
            try:
                iter(source)
            except TypeError:
                raise InvalidInputError(
                    f"the DataLoader's input_fn must return an iterable of batches, got {type(source).__name__}"
                ) from None
            self._source = source
        return self._source

    def __iter__(self) -> Iterator[Any]:
        return iter(self.source)

    def __len__(self) -> int:
        try:
            return len(self.source)  # type: ignore[arg-type]
        except TypeError as exc:
            raise TypeError(f"the batches of this DataLoader have no length: {exc}") from None


class DataExecutor:
    """One run of ``num_steps`` steps (the loader's length when None)."""

    def __init__(self, dataloader: DataLoader, num_steps: int | None = None, checkpoint_steps: int | None = None):
        if not isinstance(dataloader, DataLoader):
            raise InvalidInputError(f"DataExecutor needs a DataLoader, got {type(dataloader).__name__}")
        if num_steps is None:
            try:
                num_steps = len(dataloader)
            except TypeError as exc:
                raise InvalidInputError(f"cannot infer num_steps: {exc}; pass num_steps") from None
        self.dataloader = dataloader
        self.num_steps = check_integer("num_steps", num_steps, minimum=1)
        self.checkpoint_every = (
            None if checkpoint_steps is None else check_integer("checkpoint_steps", checkpoint_steps, minimum=0)
        )
        self._iteration = BEFORE_FIRST_STEP

    @property
    def iteration(self) -> int:
        return self._iteration

    @property
    def on_final_iteration(self) -> bool:
        return self._iteration == self.num_steps - 1

    def is_checkpoint_step(self) -> bool:
        return self._iteration == BEFORE_FIRST_STEP or is_checkpoint_step(
            self._iteration, self.num_steps, self.checkpoint_every
        )

    def _batches(self) -> Iterator[Any]:
        """The loader's batches, pass after pass; a loader with no batch at all is refused."""
        while True:
            produced = False
            for batch in self.dataloader:
                produced = True
                yield batch
            if not produced:
                raise InvalidInputError("the DataLoader yielded no batch; it must give at least one")

    def __iter__(self) -> Iterator[Any]:
        self._iteration = BEFORE_FIRST_STEP
        _state.runs.append(self)
        try:
            _run_closures()  # closures called before the run (e.g. an initial checkpoint)
            batches = self._batches()
            for step in range(self.num_steps):
                self._iteration = step
                _state.step_model = None
                batch = next(batches)
                yield batch
                _run_closures()
        finally:
            _state.runs.remove(self)
            _state.queued.clear()
            _state.step_model = None


def current_executor() -> DataExecutor:
    if not _state.runs:
        raise ExecutionContextError("no DataExecutor is running: current_executor() works inside the loop over one")
    return _state.runs[-1]


def _snapshot(value: Any) -> Any:
    """A copy of every array (and a loss's value) inside ``value``, taken now."""
    if isinstance(value, np.ndarray | np.generic):
        return np.array(value, copy=True)
    if isinstance(value, tuple | list):
        return type(value)(_snapshot(item) for item in value)
    if isinstance(value, dict):
        return {key: _snapshot(item) for key, item in value.items()}
    if hasattr(value, "backward") and hasattr(value, "item"):  # a loss
        return float(value.item())
    return value


def _queue(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], checkpoint_only: bool) -> None:
    _state.queued.append(_Closure(function, _snapshot(args), _snapshot(kwargs), checkpoint_only))


def _run_closures() -> None:
    queued, _state.queued = _state.queued, []
    run = _state.runs[-1]
    for closure in queued:
        if not closure.checkpoint_only or run.is_checkpoint_step():
            closure.function(*closure.args, **closure.kwargs)


def step_closure(closure: Callable[..., Any]) -> Callable[..., None]:
    @functools.wraps(closure)
    def queue(*args: Any, **kwargs: Any) -> None:
        _queue(closure, args, kwargs, checkpoint_only=False)

    return queue


def checkpoint_closure(closure: Callable[..., Any]) -> Callable[..., None]:
    @functools.wraps(closure)
    def queue(*args: Any, **kwargs: Any) -> None:
        _queue(closure, args, kwargs, checkpoint_only=True)

    return queue


class CompiledModel(CompiledModelView):
    """A model prepared for the steps of a run: each step may call one compiled model."""

    def __init__(self, model: Any) -> None:
        if not callable(model):
            raise InvalidInputError(f"compile needs a model, got {type(model).__name__}")
        self.model = model

    def __call__(self, x: Any) -> Any:
        if _state.runs:
            if _state.step_model is not None and _state.step_model is not self:
                raise ExecutionContextError(
                    "a second compiled model was called in this step; only a single compiled model may be used "
                    "in a given forward pass"
                )
            _state.step_model = self
        return self.model(x)


def compile(model: Any) -> CompiledModel:  # noqa: A001 - the vendor's name
    return CompiledModel(model)


def trace(step_fn: Callable[..., Any]) -> Callable[..., Any]:
    """The step function itself: the engine runs a traced step as it is, as the vendor's CPU backend does."""
    return step_fn
