"""Per-kernel cost models: training FLOPs, memory and edge tensor sizes for one sample.

A model is described by a plain list of :class:`Layer` records (the zoo builds them; the engine
builds them from its compiled graph). Each layer is one kernel. The meaning of the two width
fields depends on ``kind``:

======================  ====================  ===================  ==========================
kind                    in_features           out_features         tokens
======================  ====================  ===================  ==========================
``dense``               input width           output width         positions per sample
``attention``           d_model               d_model              sequence length
``layer_norm``          features              features (same)      positions per sample
``embedding``           table rows (vocab)    embedding width      positions looked up
``conv``                input channels        output channels      output pixels (H_out*W_out)
======================  ====================  ===================  ==========================

``attention`` includes its Q, K, V and output projections (4 d^2 weights, biased; heads x d_head = d_model);
with grouped-query attention ``kv_features`` is the width of the K and V projections (kv heads x
d_head; 0 means d_model, plain multi-head attention); ``heads`` is informative. ``conv`` uses ``kernel_size``
(square) and ``stride`` (its input has tokens x stride^2 pixels).
``layer_norm`` also stands for batch normalisation (2 parameters per feature) and, with ``bias=False``,
for RMS normalisation (1 parameter per feature).
``tied=True`` marks a layer whose weight matrix is another layer's (a language model head tied to
the token embedding): its FLOPs count, its weights do not. ``group`` names the pipeline stage a
layer belongs to (e.g. one transformer block); layers with the same group are fused into one
kernel by the execution models, and an empty group means the layer is a stage of its own.

Conventions (why): one multiply-add is 2 FLOPs; the backward pass costs twice the forward (the
activation gradient and the weight gradient are each one GEMM of the forward's size), giving the
familiar 6N FLOPs per token for transformers (FACTS.md#Hardware). Weights and optimizer state are
FP32 on the wafer, activations 16-bit (FACTS.md#Number formats, mixed precision). A layer saves
its input for the backward pass (attention also saves Q, K, V and the context, 4 more d-wide
tensors, and recomputes its T x T scores instead of storing them).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from csconform.errors import InvalidInputError

FLOPS_PER_MAC = 2
BACKWARD_TO_FORWARD = 2.0
WEIGHT_BYTES_PER_PARAM = 4  # FP32 master weights
GRADIENT_BYTES_PER_PARAM = 4  # FP32 gradient accumulator over the batch
ACTIVATION_BYTES = 2  # 16-bit activations and activation gradients
OPTIMIZERS = {"adam": (2, 10.0), "sgd": (0, 2.0), "momentum": (1, 4.0)}
"""optimizer -> (FP32 state tensors per parameter, FLOPs per parameter per update)."""

KINDS = ("dense", "attention", "layer_norm", "embedding", "conv")
LAYER_NORM_FLOPS_PER_ELEMENT = 8  # mean, variance, normalise, scale, shift (forward)


@dataclass(frozen=True)
class Layer:
    """One kernel of a model description; see the module docstring for the field meanings."""

    kind: str
    in_features: int
    out_features: int
    tokens: int = 1
    name: str = ""
    heads: int = 0
    kernel_size: int = 1
    stride: int = 1
    bias: bool = True
    tied: bool = False
    group: str = ""
    kv_features: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInputError(f"unknown layer kind {self.kind!r}; known kinds: {', '.join(KINDS)}")
        for label in ("in_features", "out_features", "tokens", "kernel_size", "stride"):
            value = getattr(self, label)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidInputError(
                    f"layer {self.name or self.kind}: {label} must be a positive integer, got {value!r}"
                )
        if self.kind in ("attention", "layer_norm") and self.in_features != self.out_features:
            raise InvalidInputError(f"layer {self.name}: {self.kind} needs in_features == out_features")
        if self.kind == "attention" and self.heads < 1:
            raise InvalidInputError(f"layer {self.name}: attention needs heads >= 1, got {self.heads}")
        if not isinstance(self.kv_features, int) or isinstance(self.kv_features, bool) or self.kv_features < 0:
            raise InvalidInputError(f"layer {self.name}: kv_features must be an integer >= 0, got {self.kv_features!r}")
        if self.kv_features and (self.kind != "attention" or self.kv_features > self.in_features):
            raise InvalidInputError(f"layer {self.name}: kv_features applies to attention and is at most d_model")

    @functools.cached_property
    def key_value_features(self) -> int:
        """Width of the K and V projections (d_model unless grouped-query attention narrows them)."""
        return self.kv_features or self.in_features

    # --- parameters --------------------------------------------------------------------------------

    @functools.cached_property
    def params(self) -> int:
        """Trainable parameters owned by this layer (tied weights are counted where they live)."""
        i, o = self.in_features, self.out_features
        if self.kind == "dense":
            weights, biases = i * o, (o if self.bias else 0)
        elif self.kind == "attention":
            kv = self.key_value_features
            weights, biases = 2 * i * i + 2 * i * kv, (2 * i + 2 * kv if self.bias else 0)
        elif self.kind == "layer_norm":
            weights, biases = i, (i if self.bias else 0)
        elif self.kind == "embedding":
            weights, biases = i * o, 0
        else:  # conv
            weights, biases = self.kernel_size**2 * i * o, (o if self.bias else 0)
        return (0 if self.tied else weights) + biases

    @functools.cached_property
    def used_params(self) -> int:
        """Parameters the layer reads, including a tied weight it shares (what weight streaming moves)."""
        shared = self.in_features * self.out_features if self.tied else 0
        return self.params + shared

    # --- FLOPs per sample --------------------------------------------------------------------------

    @functools.cached_property
    def forward_flops(self) -> float:
        """Forward FLOPs for one sample."""
        i, o, t = self.in_features, self.out_features, self.tokens
        if self.kind == "dense":
            return float(FLOPS_PER_MAC * i * o * t)
        if self.kind == "attention":
            projections = FLOPS_PER_MAC * (2 * i * i + 2 * i * self.key_value_features) * t
            return float(projections) + self.attention_core_forward_flops
        if self.kind == "layer_norm":
            return float(LAYER_NORM_FLOPS_PER_ELEMENT * i * t)
        if self.kind == "embedding":
            return 0.0  # a table lookup: memory traffic, no arithmetic
        return float(FLOPS_PER_MAC * self.kernel_size**2 * i * o * t)

    @functools.cached_property
    def attention_core_forward_flops(self) -> float:
        """Forward FLOPs of Q K^T and softmax(.) V for one sample: the part of attention with no weights."""
        if self.kind != "attention":
            return 0.0
        return float(FLOPS_PER_MAC * 2 * self.tokens * self.tokens * self.in_features)

    @functools.cached_property
    def backward_flops(self) -> float:
        """Backward FLOPs for one sample (activation gradient + weight gradient)."""
        if self.kind == "embedding":
            return float(self.out_features * self.tokens)  # scatter-add of the output gradient
        return BACKWARD_TO_FORWARD * self.forward_flops

    def weight_update_flops(self, optimizer: str = "adam") -> float:
        """FLOPs of one optimizer update of this layer's parameters (once per batch)."""
        return _optimizer(optimizer)[1] * self.params

    def training_flops_per_sample(self, batch: int, optimizer: str = "adam") -> float:
        """Forward + backward + the weight update amortised over the batch."""
        if batch < 1:
            raise InvalidInputError(f"batch must be >= 1, got {batch}")
        return self.forward_flops + self.backward_flops + self.weight_update_flops(optimizer) / batch

    # --- memory ------------------------------------------------------------------------------------

    @functools.cached_property
    def weight_bytes(self) -> float:
        return float(WEIGHT_BYTES_PER_PARAM * self.params)

    def optimizer_state_bytes(self, optimizer: str = "adam") -> float:
        """FP32 optimizer state plus the FP32 gradient accumulator (both live with the weights)."""
        states = _optimizer(optimizer)[0]
        return float((states * WEIGHT_BYTES_PER_PARAM + GRADIENT_BYTES_PER_PARAM) * self.params)

    @functools.cached_property
    def input_bytes(self) -> float:
        """Edge tensor entering the layer for one sample (forward); the gradient leaving is the same size."""
        if self.kind == "embedding":
            return float(4 * self.tokens)  # int32 indices
        if self.kind == "conv":
            return float(ACTIVATION_BYTES * self.in_features * self.tokens * self.stride**2)
        return float(ACTIVATION_BYTES * self.in_features * self.tokens)

    @functools.cached_property
    def output_bytes(self) -> float:
        """Edge tensor leaving the layer for one sample (forward)."""
        return float(ACTIVATION_BYTES * self.out_features * self.tokens)

    @functools.cached_property
    def activation_bytes_per_sample(self) -> float:
        """Saved for the backward pass, per sample: the input (attention: + Q, K, V, context)."""
        if self.kind == "embedding":
            return self.input_bytes
        if self.kind == "attention":
            return float(ACTIVATION_BYTES * (3 * self.in_features + 2 * self.key_value_features) * self.tokens)
        return self.input_bytes


def _optimizer(name: str) -> tuple[int, float]:
    if name not in OPTIMIZERS:
        raise InvalidInputError(f"unknown optimizer {name!r}; known optimizers: {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name]


@dataclass(frozen=True)
class KernelCost:
    """A pipeline stage: one layer, or the layers of one ``group`` fused into one kernel."""

    name: str
    layers: tuple[Layer, ...]
    optimizer: str = "adam"

    @functools.cached_property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @functools.cached_property
    def used_params(self) -> int:
        return sum(layer.used_params for layer in self.layers)

    @functools.cached_property
    def forward_flops(self) -> float:
        return sum(layer.forward_flops for layer in self.layers)

    @functools.cached_property
    def backward_flops(self) -> float:
        return sum(layer.backward_flops for layer in self.layers)

    @functools.cached_property
    def attention_core_forward_flops(self) -> float:
        return sum(layer.attention_core_forward_flops for layer in self.layers)

    @functools.cached_property
    def weight_layers(self) -> int:
        """Layers with their own weight matrix (norms excluded): the units weight streaming switches between."""
        return sum(1 for layer in self.layers if layer.kind != "layer_norm")

    @functools.cached_property
    def weight_update_flops(self) -> float:
        return sum(layer.weight_update_flops(self.optimizer) for layer in self.layers)

    def training_flops_per_sample(self, batch: int) -> float:
        return sum(layer.training_flops_per_sample(batch, self.optimizer) for layer in self.layers)

    @functools.cached_property
    def weight_bytes(self) -> float:
        return sum(layer.weight_bytes for layer in self.layers)

    @functools.cached_property
    def optimizer_state_bytes(self) -> float:
        return sum(layer.optimizer_state_bytes(self.optimizer) for layer in self.layers)

    @functools.cached_property
    def activation_bytes_per_sample(self) -> float:
        return sum(layer.activation_bytes_per_sample for layer in self.layers)

    @functools.cached_property
    def input_bytes(self) -> float:
        """Forward edge into the stage: the first layer's input."""
        return self.layers[0].input_bytes

    @functools.cached_property
    def output_bytes(self) -> float:
        """Forward edge out of the stage: the last layer's output."""
        return self.layers[-1].output_bytes


def group_kernels(layers: Sequence[Layer], optimizer: str = "adam") -> list[KernelCost]:
    """Fuse consecutive layers sharing a non-empty ``group`` into one kernel, in model order."""
    if not layers:
        raise InvalidInputError("a model description needs at least one layer")
    _optimizer(optimizer)
    return list(_group_kernels(tuple(layers), optimizer))


@functools.lru_cache(maxsize=256)
def _group_kernels(layers: tuple[Layer, ...], optimizer: str) -> tuple[KernelCost, ...]:
    """Cached: a model is planned many times while it is calibrated or swept, and its kernels never change."""
    kernels: list[KernelCost] = []
    current: list[Layer] = []
    for index, layer in enumerate(layers):
        if current and (not layer.group or layer.group != current[-1].group):
            kernels.append(_kernel(current, len(kernels), optimizer))
            current = []
        current.append(layer)
        if index == len(layers) - 1:
            kernels.append(_kernel(current, len(kernels), optimizer))
    names = [k.name for k in kernels]
    if len(set(names)) != len(names):
        raise InvalidInputError("kernel names must be unique (a group name was reused non-consecutively)")
    return tuple(kernels)


def _kernel(layers: list[Layer], index: int, optimizer: str) -> KernelCost:
    name = layers[0].group or layers[0].name or f"{layers[0].kind}{index}"
    return KernelCost(name=name, layers=tuple(layers), optimizer=optimizer)


def total_params(layers: Iterable[Layer]) -> int:
    return sum(layer.params for layer in layers)


def model_flops_per_sample(layers: Iterable[Layer]) -> float:
    """Forward + backward FLOPs of one sample (no optimizer): the '6N per token' quantity."""
    return sum(layer.forward_flops + layer.backward_flops for layer in layers)
