"""Capability ``nn``: parameters, layers with gradients, losses (the model side of a training step).

A model is called on a float32 array and returns a float32 array; ``loss_fn(prediction, labels)``
returns a :class:`Loss` whose ``backward()`` accumulates float32 gradients into every parameter that
produced the prediction. Layers compute with 16-bit operands where the precision says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float32]


class Parameter(Protocol):
    """``engine.nn.Parameter``: float32 master weights ``data`` and a float32 ``grad`` (or None)."""

    data: Array
    grad: Array | None

    def __init__(self, data: ArrayLike) -> None: ...

    @property
    def shape(self) -> tuple[int, ...]: ...


class Loss(Protocol):
    """The value returned by a loss function: a scalar that can start the backward pass."""

    def item(self) -> float:
        """The (scaled) loss as a Python float."""

    def __mul__(self, factor: float) -> Loss:
        """The loss multiplied by ``factor``; its backward multiplies every gradient by it."""

    def backward(self) -> None:
        """Accumulate d(loss)/d(parameter) into each parameter's ``grad``."""


class Module(Protocol):
    """A layer or a model (PyTorch-like).

    Parameter names are dotted paths: a layer's own are ``weight`` and ``bias`` (Linear, LayerNorm;
    ``weight`` for Embedding); MultiHeadSelfAttention has ``qkv.weight`` (the query, key and value
    projections stacked, in that order), ``qkv.bias``, ``proj.weight``, ``proj.bias``;
    TransformerBlock has ``ln1.``, ``attn.`` (an attention layer), ``ln2.``, ``fc1.``, ``fc2.``;
    Sequential prefixes ``layers.<index>.``.
    """

    training: bool

    def __call__(self, x: Any) -> Array: ...

    def backward(self, grad_out: Array) -> Array | None:
        """The backward pass of the last call, given d(loss)/d(output): add d(loss)/d(parameter) to
        every parameter's ``grad`` and return d(loss)/d(input) (None for integer indices)."""

    def parameters(self) -> list[Parameter]: ...

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]: ...

    def train(self, mode: bool = True) -> Module: ...

    def eval(self) -> Module: ...

    def zero_grad(self) -> None: ...

    def state_dict(self) -> Mapping[str, Array]:
        """Copies of every weight by dotted name, float32."""

    def load_state_dict(self, state: Mapping[str, ArrayLike]) -> None: ...


class Linear(Module, Protocol):
    """``engine.nn.Linear(in_features, out_features, bias=True)``: y = x W^T + b."""

    weight: Parameter
    bias: Parameter | None


_Module = Module  # the Protocol, under a name the module Protocol's attribute does not shadow
_Linear = Linear
_Parameter = Parameter  # the Protocol, under a name the module Protocol's attribute does not shadow


class NnModule(Protocol):
    """``engine.nn``"""

    Parameter: type[_Parameter]
    Module: type[_Module]
    Sequential: type[_Module]
    Linear: type[_Linear]
    ReLU: type[_Module]
    Tanh: type[_Module]
    GELU: type[_Module]
    Dropout: type[_Module]
    LayerNorm: type[_Module]
    Embedding: type[_Module]
    MultiHeadSelfAttention: type[_Module]
    TransformerBlock: type[_Module]

    def cross_entropy(self, logits: Any, targets: Any) -> Loss:
        """Mean softmax cross-entropy of integer class targets."""

    def mse_loss(self, prediction: Any, target: Any) -> Loss:
        """Mean squared error."""

    def manual_seed(self, seed: int) -> None:
        """Seed weight initialisation, so two models built after the same seed are equal."""

    def fc_mnist(self, hidden: int = 500, inputs: int = 784, classes: int = 10) -> _Module:
        """The FC-MNIST network of pipelined-execution#Example neural network: Linear-ReLU-Linear-ReLU-Linear."""
