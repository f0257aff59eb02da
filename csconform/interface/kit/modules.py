"""What every implementation's modules share: the module tree, its state dicts, ``Sequential``, and a
compiled model's view of its model.

An implementation's ``Module`` derives from :class:`ModuleTree` and says how it computes (forward and
backward) and which parameters a module holds itself (``own_parameters``); the tree gives it the
rest of the interface's ``Module`` (:mod:`csconform.interface.nn`): children, dotted parameter
names, train/eval, ``zero_grad`` and state dicts. Its ``Sequential`` derives from :class:`Sequential`
and its own ``Module``.

``load_state_dict`` refuses, for every implementation, a state dict that is not a mapping, whose names
are not the model's, or whose values are not arrays of numbers of the parameters' shapes, and it
checks every weight before it copies any, so a refused state dict changes nothing. Whether it also
refuses NaN and infinities is the one choice an implementation makes here
(:attr:`ModuleTree.refuses_non_finite_weights`): the spec states it at level reference (RUNNER-031),
so the reference engine refuses them and an adapter does what its package does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from csconform.arguments import check_type
from csconform.errors import InvalidInputError

Array = NDArray[np.float32]


class ModuleTree:
    """A layer or a model as a tree: children found among its attributes (a module, or a list or tuple
    of modules), parameters named by their dotted path, train/eval mode, and state dicts."""

    training: bool = True

    refuses_non_finite_weights: ClassVar[bool]
    """Whether ``load_state_dict`` refuses a weight holding NaN or an infinity (RUNNER-031, level
    reference): each implementation's ``Module`` says so, with its reason."""

    def own_parameters(self) -> Iterator[tuple[str, Any]]:
        """(name, parameter) of the parameters this module holds itself, not through its children."""
        raise NotImplementedError(f"{type(self).__name__} does not list its own parameters")

    def assign_weights(self, weights: Mapping[str, Array]) -> None:
        """Copy checked float32 weights, by dotted name, into the parameters (in place)."""
        raise NotImplementedError(f"{type(self).__name__} cannot assign weights")

    def named_children(self) -> Iterator[tuple[str, ModuleTree]]:
        for name, value in vars(self).items():
            if isinstance(value, ModuleTree):
                yield name, value
            elif isinstance(value, list | tuple):
                for index, item in enumerate(value):
                    if isinstance(item, ModuleTree):
                        yield f"{name}.{index}", item

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        check_type("prefix", prefix, str, "a string")
        for name, parameter in self.own_parameters():
            yield prefix + name, parameter
        for name, child in self.named_children():
            yield from child.named_parameters(prefix=f"{prefix}{name}.")

    def parameters(self) -> list[Any]:
        return [parameter for _name, parameter in self.named_parameters()]

    def train(self, mode: bool = True) -> ModuleTree:
        self.training = mode
        for _name, child in self.named_children():
            child.train(mode)
        return self

    def eval(self) -> ModuleTree:
        return self.train(False)

    def zero_grad(self) -> None:
        for parameter in self.parameters():
            parameter.grad = None

    def state_dict(self) -> dict[str, Array]:
        """Copies of all weights, by dotted name (float32)."""
        return {name: parameter.data.copy() for name, parameter in self.named_parameters()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Copy weights in place; names and shapes must match exactly (and, where the implementation
        refuses them, every value be finite). A refused state dict changes nothing."""
        self.assign_weights(self.checked_weights(state))

    def checked_weights(self, state: Mapping[str, Any]) -> dict[str, Array]:
        """The weights of ``state`` as float32 arrays, by name, once all are checked against the model."""
        if not isinstance(state, Mapping):
            raise InvalidInputError(f"a state dict must be a mapping of names to arrays, got {type(state).__name__}")
        own = dict(self.named_parameters())
        if set(state) != set(own):
            missing = sorted(set(own) - set(state))
            unexpected = sorted(map(str, set(state) - set(own)))
            raise InvalidInputError(f"state dict does not match the model: missing {missing}, unexpected {unexpected}")
        checked = {}
        for name, parameter in own.items():
            try:
                values = np.asarray(state[name], dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"{name}: not an array of numbers ({exc})") from None
            if values.shape != tuple(parameter.shape):
                raise InvalidInputError(f"{name}: shape {values.shape} does not match {tuple(parameter.shape)}")
            if self.refuses_non_finite_weights and not np.isfinite(values).all():
                raise InvalidInputError(f"{name}: holds non-finite values; parameter values must be finite")
            checked[name] = values
        return checked


class Sequential(ModuleTree):
    """Layers applied one after another; backward runs them in reverse.

    An implementation's ``Sequential`` is ``class Sequential(kit.Sequential, Module)``: its own
    ``Module`` runs each layer, this class only orders them.
    """

    def __init__(self, *layers: ModuleTree) -> None:
        for index, layer in enumerate(layers):
            check_type(f"Sequential layer {index}", layer, ModuleTree, "a module")
        self.layers: list[Any] = list(layers)  # the implementation's own modules

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def backward(self, grad_out: Any) -> Any:
        grad = grad_out
        for layer in reversed(self.layers):
            if grad is None:  # a layer whose input has no gradient (integer indices): nothing flows further
                break
            grad = layer.backward(grad)
        return grad

    def __getitem__(self, index: int) -> ModuleTree:
        return self.layers[index]

    def __len__(self) -> int:
        return len(self.layers)


class CompiledModelView:
    """A compiled model: the implementation's own ``__call__`` runs its compiled forward; every other
    attribute is the model's (``train()``, ``eval()``, ``parameters()``, ...)."""

    model: Any

    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not set yet (during construction, or when unpickling)
            raise AttributeError(name)
        return getattr(self.model, name)
