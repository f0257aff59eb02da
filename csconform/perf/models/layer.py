"""A layer and its cost model: training FLOPs, memory and edge tensor sizes for one sample.

A model is described by a plain list of :class:`Layer` records (the readers build them; the engine
builds them from its compiled graph); :func:`~csconform.perf.models.kernels.group_kernels` fuses
them into kernels. The meaning of the two width fields depends on ``kind``:

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
``q_features`` is the width of the queries and of the context (heads x d_head; 0 means d_model) and,
with grouped-query or multi-query attention, ``kv_features`` the width of the K and V projections
(kv heads x d_head; 0 means the query width); ``bias`` is the Q, K, V biases' and ``output_bias``
the output projection's (``None``: the same as ``bias``); ``window`` caps the keys a query attends
to (sliding-window attention; 0: the whole sequence); ``heads`` is informative. ``kv_tokens`` makes
the attention a cross-attention: its keys and values are projected from that many positions of
another sequence (an encoder-decoder's decoder attends to the encoder's output, which has the source
length while the decoder runs over the target length; 0: the layer's own ``tokens``, self-attention).
One field is the whole difference: the K and V projections and the score matrix scale with the key
positions, the rest with ``tokens``, and the encoder output is an extra input the layer saves for the
K and V weight gradients (``memory_bytes``). ``conv`` uses
``kernel_size`` (square) and ``stride`` (its input has tokens x stride^2 pixels).
A ``dense`` layer with ``experts`` > 1 is the layer of a mixture of experts: it owns ``experts``
copies of its weights and each token goes through ``experts_per_token`` of them, so its parameters
(and what weight streaming moves) count every expert while its FLOPs count the active ones.
``layer_norm`` also stands for batch normalisation (2 parameters per feature) and, with ``bias=False``,
for RMS normalisation (1 parameter per feature).
``scored=True`` marks a ``dense`` layer whose outputs are logits a softmax cross-entropy scores (a
language model's head over its vocabulary, a classifier over its labels): the loss is work with no
weights over every logit (see ``LOSS_FORWARD_FLOPS_PER_LOGIT``), which a 128k-token vocabulary makes
the largest elementwise step of a model.
``tied=True`` marks a layer whose weight matrix is another layer's (a language model head tied to
the token embedding): its FLOPs count, its weights do not. ``group`` names the pipeline stage a
layer belongs to (e.g. one transformer block); layers with the same group are fused into one
kernel by the execution models, and an empty group means the layer is a stage of its own.

Conventions (why): one multiply-add is 2 FLOPs; the backward pass costs twice the forward (the
activation gradient and the weight gradient are each one GEMM of the forward's size), giving the
familiar 6N FLOPs per token for transformers (public-facts#Hardware). Weights and optimizer state are
FP32 on the wafer, activations 16-bit (public-facts#Number formats, mixed precision). A layer saves
its input for the backward pass (attention also saves Q, K, V and the context, and recomputes its
T x T scores instead of storing them).

So the training FLOPs of one sequence of T tokens are (the "6N + attention" formula)
3 x [2 T N_matmul + 4 T K q per attention layer + 8 T f per norm] + T d per embedding table,
where N_matmul counts the matrix weights a token uses (a tied LM head's included, inactive experts
not), K = min(T, window) the keys per query, q the query width and f a norm's features (a
cross-attention projects its K and V at the S encoder positions, not at T, and K = S); the last
term is the embedding's backward scatter-add (its forward is a lookup). A scored head adds
(4 + 2) T V for its softmax cross-entropy over V logits.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from csconform.arguments import check_integer
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
LOSS_FORWARD_FLOPS_PER_LOGIT = 4
"""Softmax cross-entropy, forward, per logit, in its numerically stable log-sum-exp form (public-facts#Hardware):
the running maximum, the subtraction of it, the exponential and the running sum (the logarithm and
the target's pick are once per position, not per logit)."""
LOSS_BACKWARD_FLOPS_PER_LOGIT = 2
"""Its gradient, per logit: the softmax (the exponential over the sum: a multiply by the reciprocal)
minus the one-hot target, times the loss scale (the subtraction is once per position)."""


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
    q_features: int = 0
    output_bias: bool | None = None
    window: int = 0
    kv_tokens: int = 0
    experts: int = 1
    experts_per_token: int = 1
    scored: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidInputError(f"unknown layer kind {self.kind!r}; known kinds: {', '.join(KINDS)}")
        for label in ("in_features", "out_features", "tokens", "kernel_size", "stride"):
            check_integer(f"layer {self.name or self.kind}: {label}", getattr(self, label), minimum=1)
        if self.kind in ("attention", "layer_norm") and self.in_features != self.out_features:
            raise InvalidInputError(f"layer {self.name}: {self.kind} needs in_features == out_features")
        if self.kind == "attention" and self.heads < 1:
            raise InvalidInputError(f"layer {self.name}: attention needs heads >= 1, got {self.heads}")
        for label in ("kv_features", "q_features", "window", "kv_tokens"):
            value = check_integer(f"layer {self.name}: {label}", getattr(self, label), minimum=0)
            if value and self.kind != "attention":
                raise InvalidInputError(f"layer {self.name}: {label} applies to attention only")
        if self.kv_features > self.query_features:
            raise InvalidInputError(f"layer {self.name}: kv_features is at most the query width")
        if self.output_bias is not None and (not isinstance(self.output_bias, bool) or self.kind != "attention"):
            raise InvalidInputError(f"layer {self.name}: output_bias is true, false or None, for attention only")
        for label in ("experts", "experts_per_token"):
            check_integer(f"layer {self.name}: {label}", getattr(self, label), minimum=1)
        if self.experts_per_token > self.experts:
            raise InvalidInputError(f"layer {self.name}: experts_per_token exceeds experts ({self.experts})")
        if self.scored is not False and (self.scored is not True or self.kind != "dense"):
            raise InvalidInputError(f"layer {self.name}: scored is true or false, for dense layers only")
        if self.experts > 1 and (self.kind != "dense" or self.tied):
            raise InvalidInputError(f"layer {self.name}: experts apply to untied dense layers only")

    @functools.cached_property
    def query_features(self) -> int:
        """Width of the queries and the attention context (heads x d_head; d_model unless given)."""
        return self.q_features or self.in_features

    @functools.cached_property
    def key_value_features(self) -> int:
        """Width of the K and V projections (the query width unless grouped-query attention narrows them)."""
        return self.kv_features or self.query_features

    @functools.cached_property
    def key_positions(self) -> int:
        """Positions the keys and values are projected from: the encoder's for cross-attention, else ``tokens``."""
        return self.kv_tokens or self.tokens

    @functools.cached_property
    def keys_per_query(self) -> int:
        """Keys one query attends to: the key positions, or the sliding window when it is shorter."""
        return min(self.key_positions, self.window) if self.window else self.key_positions

    # --- parameters --------------------------------------------------------------------------------

    @functools.cached_property
    def params(self) -> int:
        """Trainable parameters owned by this layer (tied weights are counted where they live)."""
        i, o = self.in_features, self.out_features
        if self.kind == "dense":
            weights, biases = i * o, (o if self.bias else 0)
        elif self.kind == "attention":
            q, kv = self.query_features, self.key_value_features
            output_bias = self.bias if self.output_bias is None else self.output_bias
            weights = 2 * i * q + 2 * i * kv
            biases = (q + 2 * kv if self.bias else 0) + (i if output_bias else 0)
        elif self.kind == "layer_norm":
            weights, biases = i, (i if self.bias else 0)
        elif self.kind == "embedding":
            weights, biases = i * o, 0
        else:  # conv
            weights, biases = self.kernel_size**2 * i * o, (o if self.bias else 0)
        return self.experts * ((0 if self.tied else weights) + biases)

    @functools.cached_property
    def active_params(self) -> int:
        """Parameters one token goes through: all of them, except the experts the token is not sent to."""
        return self.params // self.experts * self.experts_per_token

    @functools.cached_property
    def used_params(self) -> int:
        """Parameters the layer reads, including a tied weight it shares, and every expert (what weight
        streaming moves: the weights of all experts, whichever tokens they receive)."""
        shared = self.in_features * self.out_features if self.tied else 0
        return self.params + shared

    # --- FLOPs per sample --------------------------------------------------------------------------

    @functools.cached_property
    def forward_flops(self) -> float:
        """Forward FLOPs for one sample."""
        i, o, t = self.in_features, self.out_features, self.tokens
        if self.kind == "dense":
            return float(FLOPS_PER_MAC * i * o * t * self.experts_per_token) + self.loss_forward_flops
        if self.kind == "attention":
            queries = 2 * i * self.query_features * t  # Q and the output projection, at every query
            keys = 2 * i * self.key_value_features * self.key_positions  # K and V, at every key position
            return float(FLOPS_PER_MAC * (queries + keys)) + self.attention_core_forward_flops
        if self.kind == "layer_norm":
            return float(LAYER_NORM_FLOPS_PER_ELEMENT * i * t)
        if self.kind == "embedding":
            return 0.0  # a table lookup: memory traffic, no arithmetic
        return float(FLOPS_PER_MAC * self.kernel_size**2 * i * o * t)

    @functools.cached_property
    def attention_core_forward_flops(self) -> float:
        """Forward FLOPs of Q K^T and softmax(.) V for one sample: the part of attention with no weights.

        Every query meets ``keys_per_query`` keys (the whole sequence, as the 6N + attention formula
        counts it, the sliding window, or the encoder's positions for cross-attention)."""
        if self.kind != "attention":
            return 0.0
        return float(FLOPS_PER_MAC * 2 * self.tokens * self.keys_per_query * self.query_features)

    @functools.cached_property
    def loss_forward_flops(self) -> float:
        """Forward FLOPs of the softmax cross-entropy over this layer's logits, for one sample (0 unless scored)."""
        return float(LOSS_FORWARD_FLOPS_PER_LOGIT * self.out_features * self.tokens) if self.scored else 0.0

    @functools.cached_property
    def loss_backward_flops(self) -> float:
        """Backward FLOPs of that loss (its gradient with respect to the logits), for one sample."""
        return float(LOSS_BACKWARD_FLOPS_PER_LOGIT * self.out_features * self.tokens) if self.scored else 0.0

    @functools.cached_property
    def backward_flops(self) -> float:
        """Backward FLOPs for one sample (activation gradient + weight gradient, and the loss's gradient)."""
        if self.kind == "embedding":
            return float(self.out_features * self.tokens)  # scatter-add of the output gradient
        products = self.forward_flops - self.loss_forward_flops
        return BACKWARD_TO_FORWARD * products + self.loss_backward_flops

    def weight_update_flops(self, optimizer: str = "adam") -> float:
        """FLOPs of one optimizer update of this layer's parameters (once per batch)."""
        return optimizer_figures(optimizer)[1] * self.params

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
        states = optimizer_figures(optimizer)[0]
        return float((states * WEIGHT_BYTES_PER_PARAM + GRADIENT_BYTES_PER_PARAM) * self.params)

    @functools.cached_property
    def input_bytes(self) -> float:
        """Edge tensor entering the layer for one sample (forward); the gradient leaving is the same size."""
        if self.kind == "embedding":
            return float(4 * self.tokens)  # int32 indices
        if self.kind == "conv":
            return float(ACTIVATION_BYTES * self.in_features * self.tokens * self.stride**2)
        return float(ACTIVATION_BYTES * self.in_features * self.tokens * self.experts_per_token)

    @functools.cached_property
    def output_bytes(self) -> float:
        """Edge tensor leaving the layer for one sample (forward); an expert layer's per active expert."""
        return float(ACTIVATION_BYTES * self.out_features * self.tokens * self.experts_per_token)

    @functools.cached_property
    def memory_bytes(self) -> float:
        """The encoder output a cross-attention reads, for one sample (0 for every other layer): a second
        input edge, beside the sequence it runs over."""
        return float(ACTIVATION_BYTES * self.in_features * self.kv_tokens)

    @functools.cached_property
    def activation_bytes_per_sample(self) -> float:
        """Saved for the backward pass, per sample: the input (attention: + Q, K, V, context, and the
        encoder output a cross-attention projects K and V from)."""
        if self.kind == "embedding":
            return self.input_bytes
        if self.kind == "attention":
            queries = (self.in_features + 2 * self.query_features) * self.tokens
            keys = 2 * self.key_value_features * self.key_positions
            return float(ACTIVATION_BYTES * (queries + keys)) + self.memory_bytes
        return self.input_bytes


def optimizer_figures(name: str) -> tuple[int, float]:
    """(FP32 state tensors per parameter, FLOPs per parameter per update) of ``optimizer``; unknown names refused."""
    if name not in OPTIMIZERS:
        raise InvalidInputError(f"unknown optimizer {name!r}; known optimizers: {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name]


def total_params(layers: Iterable[Layer]) -> int:
    return sum(layer.params for layer in layers)


def active_params(layers: Iterable[Layer]) -> int:
    """Parameters one token goes through (the total, less the experts it is not routed to)."""
    return sum(layer.active_params for layer in layers)


def model_flops_per_sample(layers: Iterable[Layer]) -> float:
    """Forward + backward FLOPs of one sample (no optimizer): the '6N per token' quantity."""
    return sum(layer.forward_flops + layer.backward_flops for layer in layers)
