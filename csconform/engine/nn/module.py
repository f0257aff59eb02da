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
from numpy.typing import NDArray

from csconform.arguments import check_float_array
from csconform.engine.nn.parameter import Parameter
from csconform.errors import InvalidInputError
from csconform.interface.kit import modules as kit

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

    run.checks_shapes = True  # type: ignore[attr-defined]
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

    run.checks_shapes = True  # type: ignore[attr-defined]
    return run


class Module(kit.ModuleTree):
    """Base class of layers and models (PyTorch-like: parameters, train/eval, state dicts; the tree and
    the state dicts are the kit's :class:`~csconform.interface.kit.modules.ModuleTree`)."""

    refuses_non_finite_weights = True
    """A Parameter's values are finite (``Parameter`` refuses others too), so a state dict holding NaN
    or an infinity is refused: the reference engine's choice of RUNNER-031."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the class's forward and backward passes, its own or inherited from a mixin (the kit's
        Sequential), unless a base class has wrapped them already."""
        super().__init_subclass__(**kwargs)
        for name, wrap in (("forward", forward_pass), ("backward", _backward_checked)):
            method = getattr(cls, name)
            if method is not getattr(Module, name) and not getattr(method, "checks_shapes", False):
                setattr(cls, name, wrap(method))

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

    def own_parameters(self) -> Iterator[tuple[str, Parameter]]:
        return ((name, value) for name, value in vars(self).items() if isinstance(value, Parameter))

    def assign_weights(self, weights: Mapping[str, Array]) -> None:
        for name, parameter in self.named_parameters():
            parameter.data[...] = weights[name]


class Sequential(kit.Sequential, Module):
    """Layers applied one after another; backward runs them in reverse (the kit's Sequential)."""
