"""Capability ``nn`` over ``torch.nn``, the layers a ``cerebras.pytorch`` model is made of.

Each adapter layer wraps a torch module; called on an array it runs the torch forward (in the
precision the package computes with, see precision.py) and returns a NumPy copy that remembers its
tensor (tensors.py), so losses and ``backward()`` run on torch autograd. Parameters are the torch
parameters seen as NumPy: ``data`` and ``grad`` share the tensors' memory, under the interface's
names (torch's ``in_proj_weight`` of an attention layer is ``qkv.weight``, and so on: ``_NAMES``).

``layer.backward(grad_out)`` is the interface's layer-by-layer backward pass: torch autograd from the
layer's last output back to its input and its own parameters (``torch.autograd.grad``), the
parameters' gradients added to ``grad``, the input's gradient returned.

A model class of the user's that composes adapter layers in ``forward`` works; arithmetic it does in
NumPy itself cannot be differentiated by torch, and a loss on such a result says so (Unsupported).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from csconform.adapters.cstorch import precision
from csconform.adapters.cstorch.tensors import output, tensor_of, to_numpy, to_torch
from csconform.errors import InvalidInputError, Unsupported
from csconform.interface.kit import loss as kit_loss
from csconform.interface.kit import modules as kit_modules


class Parameter:
    """A torch parameter seen as NumPy: float32 ``data`` and ``grad`` sharing its memory."""

    def __init__(self, data: ArrayLike | None = None, *, tensor: torch.nn.Parameter | None = None) -> None:
        if tensor is None:
            values = np.array(data, dtype=np.float32, copy=True)
            tensor = torch.nn.Parameter(torch.from_numpy(values))
        self.torch = tensor
        tensor._csconform_parameter = self  # type: ignore[attr-defined]

    @classmethod
    def of(cls, tensor: torch.nn.Parameter) -> Parameter:
        """The one wrapper of a torch parameter (kept on the tensor, so both go together)."""
        return getattr(tensor, "_csconform_parameter", None) or cls(tensor=tensor)

    @property
    def data(self) -> np.ndarray:
        return self.torch.detach().numpy()

    @data.setter
    def data(self, value: ArrayLike) -> None:
        with torch.no_grad():
            self.torch.copy_(torch.from_numpy(np.array(value, dtype=np.float32, copy=True)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.torch.shape)

    @property
    def grad(self) -> np.ndarray | None:
        return None if self.torch.grad is None else self.torch.grad.numpy()

    @grad.setter
    def grad(self, value: ArrayLike | None) -> None:
        if value is None:
            self.torch.grad = None
            return
        grad = np.array(value, dtype=np.float32, copy=True)
        if grad.shape != self.shape:
            raise InvalidInputError(f"gradient shape {grad.shape} does not match parameter shape {self.shape}")
        self.torch.grad = torch.from_numpy(grad)

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape})"


def torch_parameters(params: Any) -> list[torch.nn.Parameter]:
    """The torch parameters behind adapter parameters."""
    tensors = []
    for param in params:
        if not isinstance(param, Parameter):
            raise InvalidInputError(f"expected adapter Parameters, got {type(param).__name__}")
        tensors.append(param.torch)
    return tensors


class Module(kit_modules.ModuleTree):
    """A layer or a model. Layers wrap ``self.torch_module``; a model of the user's composes layers.
    The tree, its names and its state dicts are the kit's :class:`~csconform.interface.kit.modules.ModuleTree`."""

    torch_module: torch.nn.Module | None = None

    refuses_non_finite_weights = False
    """The package loads whatever values a state dict holds (torch copies each parameter as given:
    torch/nn/modules/module.py ``param.copy_(input_param)``), NaN and infinities included, and so does
    the adapter; refusing them is the reference engine's choice (RUNNER-031, triaged reference-choice)."""

    def forward(self, x: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement forward")

    def forward_torch(self, x: torch.Tensor) -> torch.Tensor:
        assert self.torch_module is not None
        return self.torch_module(x)

    def input_dtype(self) -> torch.dtype:
        return torch.float32

    def __call__(self, x: Any) -> Any:
        if type(self).forward is not Module.forward:  # a user's model: its own forward, in NumPy terms
            return self.forward(x)
        inputs = to_torch(x, self.input_dtype())
        if tensor_of(x) is None and not isinstance(x, torch.Tensor) and inputs.is_floating_point():
            inputs.requires_grad_(True)  # a new leaf, so backward() can return the input's gradient
        with precision.compute():
            result = self.forward_torch(inputs)
        self._last_call = (inputs, result)
        return output(result)

    def backward(self, grad_out: Any) -> np.ndarray | None:
        """Add d(loss)/d(parameter) of the last call to each parameter's grad; return d(loss)/d(input)
        (None when the input is not differentiable, e.g. integer indices)."""
        last = getattr(self, "_last_call", None)
        if last is None:
            raise NotImplementedError(f"{type(self).__name__} has no forward call to run backward from")
        inputs, result = last
        params = [tensor for tensor in self.torch_module.parameters() if tensor.requires_grad]  # type: ignore[union-attr]
        wrt = params + ([inputs] if inputs.requires_grad else [])
        if not wrt:
            return None
        grad = torch.from_numpy(np.array(grad_out, dtype=np.float32, copy=True))
        if tuple(grad.shape) != tuple(result.shape):
            raise InvalidInputError(f"output gradient shape {tuple(grad.shape)} does not match {tuple(result.shape)}")
        grads = torch.autograd.grad(
            result, wrt, grad_outputs=grad.to(result.dtype), retain_graph=True, allow_unused=True
        )
        for tensor, value in zip(params, grads, strict=False):
            if value is None:
                continue
            value = value.detach().to(torch.float32)
            tensor.grad = value if tensor.grad is None else tensor.grad + value
        return to_numpy(grads[-1]) if inputs.requires_grad and grads[-1] is not None else None

    def own_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """A layer's parameters are its torch module's, under the interface's names; a model composed of
        layers holds none itself."""
        if self.torch_module is None or any(True for _ in self.named_children()):
            return
        for name, tensor in self.torch_module.named_parameters():
            yield _interface_name(name), Parameter.of(tensor)

    def assign_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        for name, param in self.named_parameters():
            param.data = weights[name]

    def train(self, mode: bool = True) -> Module:
        if self.torch_module is not None:
            self.torch_module.train(mode)
        super().train(mode)
        return self


class Sequential(kit_modules.Sequential, Module):
    """Layers applied one after another; backward runs them in reverse (the kit's Sequential)."""


# torch's parameter names inside the adapter's layers -> the interface's (the reference engine's) names
_NAMES = (
    ("attention.in_proj_weight", "qkv.weight"),
    ("attention.in_proj_bias", "qkv.bias"),
    ("attention.out_proj.", "proj."),
    ("mlp.0.", "fc1."),
    ("mlp.2.", "fc2."),
)


def _interface_name(name: str) -> str:
    for torch_name, interface_name in _NAMES:
        name = name.replace(torch_name, interface_name)
    return name


class _Layer(Module):
    def __init__(self, module: torch.nn.Module) -> None:
        self.torch_module = module


def _torch_call(factory: Any, *args: Any, **kwargs: Any) -> torch.nn.Module:
    try:
        return factory(*args, **kwargs)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInputError(f"{getattr(factory, '__name__', factory)}: {exc}") from exc


class Linear(_Layer):
    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__(_torch_call(torch.nn.Linear, in_features, out_features, bias=bias))

    @property
    def weight(self) -> Parameter:
        return Parameter.of(self.torch_module.weight)  # type: ignore[union-attr, arg-type]

    @property
    def bias(self) -> Parameter | None:
        bias = self.torch_module.bias  # type: ignore[union-attr]
        return None if bias is None else Parameter.of(bias)  # type: ignore[arg-type]


class ReLU(_Layer):
    def __init__(self) -> None:
        super().__init__(torch.nn.ReLU())


class Tanh(_Layer):
    def __init__(self) -> None:
        super().__init__(torch.nn.Tanh())


class GELU(_Layer):
    def __init__(self) -> None:
        super().__init__(torch.nn.GELU(approximate="tanh"))


class LayerNorm(_Layer):
    def __init__(self, normalized_shape: int, eps: float = 1e-5) -> None:
        super().__init__(_torch_call(torch.nn.LayerNorm, normalized_shape, eps=eps))


class Embedding(_Layer):
    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__(_torch_call(torch.nn.Embedding, num_embeddings, embedding_dim))

    def input_dtype(self) -> torch.dtype:
        return torch.int64


class _SeededDropout(torch.nn.Module):
    """Dropout whose masks come from its own generator, so a run can be replayed."""

    def __init__(self, p: float, seed: int) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p
        self.generator = torch.Generator().manual_seed(seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape, generator=self.generator) >= self.p
        return x * keep.to(x.dtype) / (1.0 - self.p)


class Dropout(_Layer):
    def __init__(self, p: float = 0.5, seed: int = 0) -> None:
        super().__init__(_torch_call(_SeededDropout, p, seed))


class _SelfAttention(torch.nn.Module):
    def __init__(self, d_model: int, num_heads: int, causal: bool) -> None:
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = None
        if self.causal:
            length = x.shape[-2]
            mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
        return self.attention(x, x, x, attn_mask=mask, need_weights=False)[0]


class MultiHeadSelfAttention(_Layer):
    def __init__(self, d_model: int, num_heads: int, causal: bool = False) -> None:
        super().__init__(_torch_call(_SelfAttention, d_model, num_heads, causal))


class _Block(torch.nn.Module):
    """Pre-LN block: h = x + Dropout(Attn(LN1(x))); y = h + Dropout(MLP(LN2(h)))."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, causal: bool, dropout: float) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d_model)
        self.attn = _SelfAttention(d_model, num_heads, causal)
        self.attn_dropout = _SeededDropout(dropout, seed=1)
        self.ln2 = torch.nn.LayerNorm(d_model)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d_model, d_ff), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(d_ff, d_model)
        )
        self.mlp_dropout = _SeededDropout(dropout, seed=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attn_dropout(self.attn(self.ln1(x)))
        return h + self.mlp_dropout(self.mlp(self.ln2(h)))


class TransformerBlock(_Layer):
    def __init__(
        self, d_model: int, num_heads: int, d_ff: int | None = None, causal: bool = False, dropout: float = 0.0
    ) -> None:
        super().__init__(_torch_call(_Block, d_model, num_heads, d_ff or 4 * d_model, causal, dropout))


class Loss(kit_loss.Loss):
    """A scalar loss tensor at the interface: its value, scaling, and ``backward()`` by torch autograd."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.torch = tensor

    @property
    def value(self) -> np.float32:
        return np.float32(self.torch.detach().item())

    def scaled(self, factor: float) -> Loss:
        return Loss(self.torch * factor)

    def backward(self) -> None:
        self.torch.backward()


def _prediction(value: Any) -> torch.Tensor:
    tensor = tensor_of(value)
    if tensor is None:
        raise Unsupported(
            "the prediction was computed outside the adapter's torch layers (NumPy arithmetic in a model's "
            "forward), so torch autograd cannot carry gradients through it"
        )
    return tensor


def cross_entropy(logits: Any, targets: Any) -> Loss:
    labels = torch.from_numpy(np.asarray(targets).astype(np.int64))
    return Loss(torch.nn.functional.cross_entropy(_prediction(logits).float(), labels))


def mse_loss(prediction: Any, target: Any) -> Loss:
    return Loss(torch.nn.functional.mse_loss(_prediction(prediction).float(), to_torch(target)))


class CrossEntropyLoss:
    __name__ = "cross_entropy"

    def __call__(self, logits: Any, targets: Any) -> Loss:
        return cross_entropy(logits, targets)


class MSELoss:
    __name__ = "mse_loss"

    def __call__(self, prediction: Any, target: Any) -> Loss:
        return mse_loss(prediction, target)


def manual_seed(seed: int) -> None:
    torch.manual_seed(seed)


def fc_mnist(hidden: int = 500, inputs: int = 784, classes: int = 10) -> Sequential:
    return Sequential(Linear(inputs, hidden), ReLU(), Linear(hidden, hidden), ReLU(), Linear(hidden, classes))


def values(array: Any) -> np.ndarray:
    """The float32 values of an adapter-made array or tensor (helper for other adapter modules)."""
    tensor = tensor_of(array)
    return to_numpy(tensor) if tensor is not None else np.asarray(array, dtype=np.float32)
