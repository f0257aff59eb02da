"""Capability ``executor``: the execution API of a Cerebras-compatible PyTorch runtime.

The vendor's package runs a training loop through a few public names (cerebras.pytorch 2.10:
``compile``, ``trace``, ``utils.data.DataLoader``, ``utils.data.DataExecutor``, ``step_closure``,
``checkpoint_closure``, ``current_executor``), and a user of any compatible runtime writes the loop
the same way::

    compiled = executor.compile(model)

    @executor.trace
    def train_step(features, labels):
        ...                      # forward through ``compiled``, backward, optimizer step
        return loss

    @executor.step_closure
    def report(loss):            # runs at the end of the step, with the loss of that step
        ...

    @executor.checkpoint_closure
    def save(step):              # runs only on checkpoint steps
        ...

    loader = executor.DataLoader(input_fn)
    for step, (features, labels) in enumerate(executor.DataExecutor(loader, num_steps=100, checkpoint_steps=10)):
        loss = train_step(features, labels)
        report(loss)
        save(step)

What the contract says is in ``specs/executor.yaml`` (source: the vendor's public API). Values cross
as elsewhere: ``input_fn`` returns an iterable of batches (tuples of NumPy arrays), the executor
yields them as NumPy arrays, a compiled model is called on arrays; a closure's array arguments reach
it as NumPy arrays and a loss as its float value. Misuse of the execution context (a second compiled
model in a step, ``current_executor()`` outside a run) raises
:class:`~csconform.errors.ExecutionContextError`; bad arguments raise ``InvalidInputError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol


class CompiledModel(Protocol):
    """A model prepared by ``compile``: called like the model, in at most one per step."""

    def __call__(self, x: Any) -> Any: ...


class DataLoader(Protocol):
    """``DataLoader(input_fn, *args, **kwargs)``: ``input_fn(*args, **kwargs)`` returns the batches."""

    def __init__(self, input_fn: Callable[..., Iterable[Any]], *args: Any, **kwargs: Any) -> None: ...


_DataLoader = DataLoader  # the Protocol, under a name the module Protocol's attribute does not shadow


class DataExecutor(Protocol):
    """One run: iterating it yields the batch of each step, ``num_steps`` of them."""

    def __init__(
        self, dataloader: _DataLoader, num_steps: int | None = None, checkpoint_steps: int | None = None
    ) -> None: ...

    def __iter__(self) -> Iterator[Any]: ...

    @property
    def iteration(self) -> int:
        """The current step, counted from 0."""

    @property
    def on_final_iteration(self) -> bool:
        """True on the run's last step only."""


_DataExecutor = DataExecutor  # the Protocol, under a name the module Protocol's attribute does not shadow


class ExecutorModule(Protocol):
    """``engine.executor``"""

    DataLoader: type[_DataLoader]
    DataExecutor: type[_DataExecutor]

    def compile(self, model: Any) -> CompiledModel:
        """Prepare ``model`` to run in the steps of a run."""

    def trace(self, step_fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap the function that performs one step (forward, backward, optimizer step)."""

    def step_closure(self, closure: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap ``closure`` so that a call queues it to run at the end of the step."""

    def checkpoint_closure(self, closure: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap ``closure`` so that a call runs it only on checkpoint steps of a run."""

    def current_executor(self) -> _DataExecutor:
        """The executor being iterated."""
