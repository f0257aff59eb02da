"""Token embedding: a table lookup whose gradient is scattered back into the rows used."""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.arguments import check_integer_array
from csconform.engine.nn import init
from csconform.engine.nn.module import Array, Module
from csconform.engine.nn.parameter import Parameter, layer_size
from csconform.engine.precision import compute_operand
from csconform.errors import InvalidInputError


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        self.num_embeddings = layer_size("num_embeddings", num_embeddings)
        self.embedding_dim = layer_size("embedding_dim", embedding_dim)
        self.weight = Parameter(init.normal((self.num_embeddings, self.embedding_dim), 1.0))

    def forward(self, indices: Any) -> Array:
        indices = check_integer_array("embedding indices", indices)
        if indices.size and (indices.min() < 0 or indices.max() >= self.num_embeddings):
            raise InvalidInputError(f"embedding indices must lie in [0, {self.num_embeddings})")
        self._indices = indices
        return compute_operand(self.weight.data[indices])

    def backward(self, grad_out: Array) -> None:
        """Accumulate the weight gradient; indices have no gradient, so the chain ends here."""
        grad = np.zeros_like(self.weight.data)
        np.add.at(grad, self._indices.reshape(-1), compute_operand(grad_out).reshape(-1, self.embedding_dim))
        self.weight.accumulate_grad(grad)
        return None
