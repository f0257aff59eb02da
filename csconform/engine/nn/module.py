"""The Module base class and the tiny tape that connects a loss to the model that produced it.

Autograd in the reference engine is deliberately plain:

* every module implements ``forward(x)`` and ``backward(grad_out) -> grad_in``; ``forward`` caches
  what ``backward`` needs, and ``backward`` *adds* parameter gradients into ``Parameter.grad``
  (float32). One backward per forward: a second forward overwrites the cache.
* a composite module (Sequential, TransformerBlock, your own model) calls its children in
  ``forward`` and their ``backward`` in reverse order in its own ``backward``.
* when a module is called from outside any module (the top level), ``__call__`` records on a tape
  which module produced the output array and from which input. ``Loss.backward()`` (see loss.py)
  looks its prediction up on that tape and walks back through the recorded top-level calls, so
  ``loss_fn(model(x), y).backward()`` and chains of top-level calls both work.

Mixed precision lives in the operations, not here: every layer passes its operands through
``precision.compute_operand`` (rounding to the half dtype) and computes in float32.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from csconform.arguments import check_float_array
from csconform.engine.nn.parameter import Parameter
from csconform.errors import InvalidInputError

Array = NDArray[np.float32]

# id(output) -> (weak reference to the output, producing module, its input)
_tape: dict[int, tuple[weakref.ref, Module, Any]] = {}
_call_depth = [0]


def _record(output: Any, module: Module, model_input: Any) -> None:
    """Remember who produced ``output``; an identity call (output is the input) keeps the old entry."""
    if not isinstance(output, np.ndarray) or output is model_input:
        return
    key, tape = id(output), _tape

    def forget(_ref: weakref.ref) -> None:
        tape.pop(key, None)

    _tape[key] = (weakref.ref(output, forget), module, model_input)


def backpropagate(output: Array, grad: Array | None) -> None:
    """Run backward from ``output`` through every recorded top-level module call that led to it."""
    while grad is not None:
        entry = _tape.get(id(output))
        if entry is None or entry[0]() is not output:
            return
        _ref, module, model_input = entry
        grad = module.backward(grad)
        output = model_input


def forward_pass(forward: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``forward`` that remembers the shape of its output, which ``backward`` checks against.

    Every ``forward`` is wrapped so (see ``Module.__init_subclass__``); a layer with another entry
    point to its forward pass (``LayerNorm.forward_rounded``) wraps that one too.
    """

    @functools.wraps(forward)
    def run(self: Any, x: Any) -> Any:
        output = forward(self, x)
        self._output_shape = output.shape if isinstance(output, np.ndarray) else None
        return output

    return run


def _backward_checked(backward: Callable[[Any, Array], Any]) -> Callable[[Any, Any], Any]:
    """``backward`` that refuses to run before a forward pass, or on a gradient of another shape
    than the forward output (one check for every layer and model, user-defined ones included)."""

    @functools.wraps(backward)
    def run(self: Any, grad_out: Any) -> Any:
        shape = getattr(self, "_output_shape", None)
        if shape is None:
            raise InvalidInputError(f"{type(self).__name__}.backward() needs a forward pass first")
        grad = check_float_array("grad_out", grad_out)
        if grad.shape != shape:
            raise InvalidInputError(
                f"{type(self).__name__}.backward(): grad_out has shape {grad.shape}, the forward output {shape}"
            )
        return backward(self, grad)

    return run


class Module:
    """Base class of layers and models (PyTorch-like: parameters, train/eval, state dicts)."""

    training: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" in cls.__dict__:
            setattr(cls, "forward", forward_pass(cls.__dict__["forward"]))  # noqa: B010 - replaces the method
        if "backward" in cls.__dict__:
            setattr(cls, "backward", _backward_checked(cls.__dict__["backward"]))  # noqa: B010

    def forward(self, x: Any) -> Array:
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def backward(self, grad_out: Array) -> Array | None:
        raise NotImplementedError(f"{type(self).__name__} does not implement backward")

    def __call__(self, x: Any) -> Array:
        _call_depth[0] += 1
        try:
            output = self.forward(x)
        finally:
            _call_depth[0] -= 1
        if _call_depth[0] == 0:
            _record(output, self, x)
        return output

    # --- structure ---

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, list | tuple):
                for index, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{index}", item

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        if not isinstance(prefix, str):
            raise InvalidInputError(f"prefix must be a string, got {type(prefix).__name__}")
        for name, value in vars(self).items():
            if isinstance(value, Parameter):
                yield prefix + name, value
        for name, child in self.named_children():
            yield from child.named_parameters(prefix=f"{prefix}{name}.")

    def parameters(self) -> list[Parameter]:
        return [parameter for _name, parameter in self.named_parameters()]

    def train(self, mode: bool = True) -> Module:
        self.training = mode
        for _name, child in self.named_children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self) -> None:
        for parameter in self.parameters():
            parameter.grad = None

    # --- checkpoints ---

    def state_dict(self) -> dict[str, Array]:
        """Copies of all weights, by dotted name (float32)."""
        return {name: parameter.data.copy() for name, parameter in self.named_parameters()}

    def load_state_dict(self, state: dict[str, ArrayLike]) -> None:
        """Copy weights in place; names and shapes must match exactly and every value be finite.

        Every weight is checked before any is copied, so a refused state dict changes nothing.
        """
        self._assign_weights(self._checked_weights(state))

    def _checked_weights(self, state: Mapping[str, ArrayLike]) -> dict[str, Array]:
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
            if values.shape != parameter.shape:
                raise InvalidInputError(f"{name}: shape {values.shape} does not match {parameter.shape}")
            if not np.isfinite(values).all():
                raise InvalidInputError(f"{name}: holds non-finite values; parameter values must be finite")
            checked[name] = values
        return checked

    def _assign_weights(self, weights: Mapping[str, Array]) -> None:
        for name, parameter in self.named_parameters():
            parameter.data[...] = weights[name]


class Sequential(Module):
    """Layers applied one after another; backward runs them in reverse."""

    def __init__(self, *layers: Module) -> None:
        for layer in layers:
            if not isinstance(layer, Module):
                raise InvalidInputError(f"Sequential takes modules, got {type(layer).__name__}")
        self.layers = list(layers)

    def forward(self, x: Any) -> Array:
        for layer in self.layers:
            x = layer(x)
        return x

    def backward(self, grad_out: Array) -> Array | None:
        grad: Array | None = grad_out
        for layer in reversed(self.layers):
            if grad is None:
                break
            grad = layer.backward(grad)
        return grad

    def __getitem__(self, index: int) -> Module:
        return self.layers[index]

    def __len__(self) -> int:
        return len(self.layers)
