"""Capability ``executor``: the package's execution API, passed through.

``compile``, ``trace``, ``DataLoader``, ``DataExecutor``, ``step_closure``, ``checkpoint_closure``
and ``current_executor`` are the package's own (``cstorch.compile``, ``cstorch.trace``,
``cstorch.utils.data.DataLoader``/``DataExecutor``, ``cstorch.step_closure``,
``cstorch.checkpoint_closure``, ``cstorch.current_executor``), on the CPU backend. The adapter only
converts: batches are NumPy at the interface and torch tensors inside; a compiled model is the
adapter's model seen as one torch module (:class:`TorchModel`); a closure's arguments go to the
package as tensors that share the arrays' memory (an adapter loss as its tensor), so the copies a
closure sees are the ones the package takes, and come back as NumPy arrays (a loss as its float).
The package's refusals become the interface's typed errors with its message: around the executor's
construction (InvalidInputError), an empty loader, a second compiled model in a step and
``current_executor()`` outside a run (ExecutionContextError).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import backend
from csconform.adapters.cstorch.nn import Loss, Module
from csconform.adapters.cstorch.refusals import refusals
from csconform.adapters.cstorch.tensors import output, tensor_of
from csconform.errors import ExecutionContextError, InvalidInputError, Unsupported
from csconform.interface.kit.modules import CompiledModelView

_ONE_MODEL = "Only a single compiled model may be used"
EMPTY_LOADER = "Iterating the dataloader did not return any values"


def _leaf_modules(model: Module) -> list[torch.nn.Module]:
    children = [child for _name, child in model.named_children() if isinstance(child, Module)]
    if not children:
        return [] if model.torch_module is None else [model.torch_module]
    return [leaf for child in children for leaf in _leaf_modules(child)]


class TorchModel(torch.nn.Module):
    """An adapter model as the torch module ``cstorch.compile`` takes: the layers' torch modules are
    its submodules (so the package sees every parameter), and its forward is the adapter model's."""

    adapter_model: Module

    def __init__(self, model: Module) -> None:
        super().__init__()
        if not isinstance(model, Module):
            raise InvalidInputError(f"compile takes a model of the adapter's nn module, got {type(model).__name__}")
        self.layers = torch.nn.ModuleList(_leaf_modules(model))
        object.__setattr__(self, "adapter_model", model)  # not a torch submodule

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = tensor_of(self.adapter_model(output(x)))
        if result is None:
            raise Unsupported(
                "the model's forward computes in NumPy outside the adapter's torch layers, so the package cannot "
                "run it as a torch module"
            )
        return result


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    tensor = tensor_of(value)
    return tensor if tensor is not None else torch.as_tensor(np.asarray(value))


class CompiledModel(CompiledModelView):
    """``cstorch.compile(model)``: called on an array, it runs the package's compiled forward."""

    def __init__(self, model: Module) -> None:
        self.model = model
        self.torch = TorchModel(model)
        self._forward = cstorch.compile(self.torch, backend.cpu_backend())

    def __call__(self, x: Any) -> np.ndarray:
        try:
            return output(self._forward(_tensor(x)))
        except RuntimeError as exc:
            if _ONE_MODEL in str(exc):
                raise ExecutionContextError(str(exc)) from exc
            raise


def compile(model: Module) -> CompiledModel:  # noqa: A001 - the package's name
    return CompiledModel(model)


def trace(step_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``cstorch.trace(step_fn)``: on the CPU backend the package runs the step as it is."""
    return cstorch.trace(step_fn)


def _to_package(value: Any) -> Any:
    """Arrays as tensors, numbers as they are (for batches, which the package moves as tensors)."""
    if isinstance(value, np.ndarray):
        return torch.as_tensor(value)
    if isinstance(value, tuple | list):
        return type(value)(_to_package(item) for item in value)
    if isinstance(value, dict):
        return {key: _to_package(item) for key, item in value.items()}
    return value


def _to_interface(value: Any) -> Any:
    """Tensors as NumPy arrays that remember them (so a compiled model continues on them)."""
    if isinstance(value, torch.Tensor):
        return output(value) if value.is_floating_point() else value.detach().cpu().numpy()
    if isinstance(value, tuple | list):
        return type(value)(_to_interface(item) for item in value)
    if isinstance(value, dict):
        return {key: _to_interface(item) for key, item in value.items()}
    return value


class _TorchBatches:
    """What the package's DataLoader iterates: the user's batches as tensors."""

    def __init__(self, batches: Iterable[Any]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Any]:
        return (_to_package(batch) for batch in self.batches)

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]


class DataLoader:
    """``cstorch.utils.data.DataLoader`` over ``input_fn(*args, **kwargs)``."""

    def __init__(self, input_fn: Callable[..., Iterable[Any]], *args: Any, **kwargs: Any) -> None:
        if not callable(input_fn):
            raise InvalidInputError("DataLoader needs a callable that returns an iterable of batches")

        def torch_input_fn(*args: Any, **kwargs: Any) -> _TorchBatches:
            return _TorchBatches(input_fn(*args, **kwargs))

        backend.cpu_backend()
        self.torch = cstorch.utils.data.DataLoader(torch_input_fn, *args, **kwargs)


_executors: weakref.WeakKeyDictionary[Any, DataExecutor] = weakref.WeakKeyDictionary()


class DataExecutor:
    """``cstorch.utils.data.DataExecutor``; iterating it yields each step's batch as NumPy."""

    def __init__(self, dataloader: Any, num_steps: int | None = None, checkpoint_steps: int | None = None) -> None:
        loader = dataloader.torch if isinstance(dataloader, DataLoader) else dataloader
        backend.cpu_backend()
        with refusals({RuntimeError: InvalidInputError, ValueError: InvalidInputError, TypeError: InvalidInputError}):
            self.torch = cstorch.utils.data.DataExecutor(loader, num_steps=num_steps, checkpoint_steps=checkpoint_steps)
        _executors[self.torch] = self

    @classmethod
    def of(cls, package_executor: Any) -> DataExecutor:
        """The adapter's executor for one of the package's (made here, or by the adapter's runner)."""
        known = _executors.get(package_executor)
        if known is None:
            known = cls.__new__(cls)
            known.torch = package_executor
            _executors[package_executor] = known
        return known

    def __iter__(self) -> Iterator[Any]:
        batches = iter(self.torch)
        try:
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except RuntimeError as exc:
                    if EMPTY_LOADER in str(exc):
                        raise InvalidInputError(str(exc)) from exc
                    raise
                yield _to_interface(batch)
        finally:
            batches.close()

    @property
    def iteration(self) -> int:
        return int(self.torch.iteration)

    @property
    def on_final_iteration(self) -> bool:
        return bool(self.torch.on_final_iteration)


def current_executor() -> DataExecutor:
    with refusals({RuntimeError: ExecutionContextError}):
        return DataExecutor.of(cstorch.current_executor())


# --- closures: the package's, with the arguments converted on the way in and out -----------------


def _outbound(value: Any, kinds: list[str]) -> Any:
    """A closure argument for the package: arrays as tensors sharing their memory, a loss as its tensor."""
    if isinstance(value, Loss):
        kinds.append("loss")
        return value.torch
    if isinstance(value, np.ndarray):
        kinds.append("array")
        known = tensor_of(value)
        return known if known is not None else _shared_tensor(value)
    if isinstance(value, tuple | list):
        return type(value)(_outbound(item, kinds) for item in value)
    if isinstance(value, dict):
        return {key: _outbound(item, kinds) for key, item in value.items()}
    return value


def _shared_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor over the array's own memory: copying is the package's business, not the adapter's."""
    if array.flags.writeable:
        return torch.from_numpy(array)
    return torch.tensor(array)  # torch does not share read-only memory


def _inbound(value: Any, kinds: Iterator[str]) -> Any:
    if isinstance(value, torch.Tensor):
        if next(kinds) == "loss":
            return float(value.detach().item())
        return value.detach().cpu().numpy()
    if isinstance(value, tuple | list):
        return type(value)(_inbound(item, kinds) for item in value)
    if isinstance(value, dict):
        return {key: _inbound(item, kinds) for key, item in value.items()}
    return value


def _wrap(package_decorator: Callable[[Callable[..., Any]], Callable[..., Any]], closure: Callable[..., Any]) -> Any:
    def on_host(kinds: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        remaining = iter(kinds)
        closure(*_inbound(args, remaining), **_inbound(kwargs, remaining))

    on_host.__name__ = getattr(closure, "__name__", "closure")
    queued = package_decorator(on_host)

    @functools.wraps(closure)
    def call(*args: Any, **kwargs: Any) -> None:
        kinds: list[str] = []
        package_args = _outbound(args, kinds)
        package_kwargs = _outbound(kwargs, kinds)
        queued(tuple(kinds), package_args, package_kwargs)

    return call


def step_closure(closure: Callable[..., Any]) -> Callable[..., None]:
    """``cstorch.step_closure``."""
    return _wrap(cstorch.step_closure, closure)


def checkpoint_closure(closure: Callable[..., Any]) -> Callable[..., None]:
    """``cstorch.checkpoint_closure``."""
    return _wrap(cstorch.checkpoint_closure, closure)
