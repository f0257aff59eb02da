"""Kernels: the stages the execution models place or stream, one layer or a fused group of layers.

A transformer block's layers share one ``group`` and become one kernel; its costs are the sums of
its layers' (:mod:`csconform.perf.models.layer`), and its edges are the first layer's input and the
last layer's output (and, in an encoder-decoder's decoder block, the encoder output its cross-attention reads).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from csconform.errors import InvalidInputError
from csconform.perf.models.layer import Layer, optimizer_figures


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
    def active_params(self) -> int:
        return sum(layer.active_params for layer in self.layers)

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
    def loss_forward_flops(self) -> float:
        return sum(layer.loss_forward_flops for layer in self.layers)

    @functools.cached_property
    def loss_backward_flops(self) -> float:
        return sum(layer.loss_backward_flops for layer in self.layers)

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
    def memory_bytes(self) -> float:
        """Forward edges into the stage besides the first layer's: the encoder output its cross-attentions read."""
        return sum(layer.memory_bytes for layer in self.layers)

    @functools.cached_property
    def output_bytes(self) -> float:
        """Forward edge out of the stage: the last layer's output."""
        return self.layers[-1].output_bytes


def group_kernels(layers: Sequence[Layer], optimizer: str = "adam") -> list[KernelCost]:
    """Fuse consecutive layers sharing a non-empty ``group`` into one kernel, in model order.

    Not cached: a plan groups its model once and hands the kernels to every execution model it asks.
    """
    if not layers:
        raise InvalidInputError("a model description needs at least one layer")
    optimizer_figures(optimizer)
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
    return kernels


def _kernel(layers: list[Layer], index: int, optimizer: str) -> KernelCost:
    name = layers[0].group or layers[0].name or f"{layers[0].kind}{index}"
    return KernelCost(name=name, layers=tuple(layers), optimizer=optimizer)
