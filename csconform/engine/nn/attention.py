"""Multi-head self-attention with an optional causal mask.

Both matmuls (scores = Q K^T and context = P V) read 16-bit-rounded operands and accumulate in
float32; the softmax runs in float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from csconform.arguments import check_flag, check_float_array
from csconform.engine.nn.linear import Linear
from csconform.engine.nn.module import Array, Module
from csconform.engine.nn.parameter import layer_size
from csconform.engine.precision import compute_operand
from csconform.errors import InvalidInputError


def softmax(scores: Array) -> Array:
    """Softmax over the last axis (float32, max-shifted)."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


class MultiHeadSelfAttention(Module):
    """Input and output shape (batch, seq, d_model); ``causal`` hides later positions."""

    def __init__(self, d_model: int, num_heads: int, causal: bool = False) -> None:
        self.d_model = layer_size("d_model", d_model)
        self.num_heads = layer_size("num_heads", num_heads)
        if self.d_model % self.num_heads:
            raise InvalidInputError(f"d_model {d_model} is not divisible by num_heads {num_heads}")
        self.head_dim = self.d_model // self.num_heads
        self.causal = check_flag("causal", causal)
        self.qkv = Linear(self.d_model, 3 * self.d_model)
        self.proj = Linear(self.d_model, self.d_model)

    def forward(self, x: Any) -> Array:
        x = check_float_array("input", x, last_dim=self.d_model)
        if x.ndim != 3:
            raise InvalidInputError(f"attention input must be (batch, seq, d_model), got shape {x.shape}")
        batch, seq, _ = x.shape
        # round once while contiguous; q, k, v are (batch, heads, seq, head_dim) views of the result
        qkv = compute_operand(self.qkv(x)).reshape(batch, seq, 3, self.num_heads, self.head_dim)
        self._q, self._k, self._v = qkv.transpose(2, 0, 3, 1, 4)
        self._scale = np.float32(1.0 / np.sqrt(self.head_dim))
        scores = (self._q @ self._k.swapaxes(-1, -2)) * self._scale
        if self.causal:
            later = np.triu(np.ones((seq, seq), dtype=bool), k=1)
            scores = np.where(later, np.float32(-np.inf), scores)
        self._probs = softmax(scores)
        self._probs_operand = compute_operand(self._probs)
        context = self._probs_operand @ self._v
        return self.proj(context.transpose(0, 2, 1, 3).reshape(batch, seq, self.d_model))

    def backward(self, grad_out: Array) -> Array:
        batch, seq, _ = grad_out.shape
        grad_context = compute_operand(self.proj.backward(grad_out))
        grad_context = grad_context.reshape(batch, seq, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)
        grad_v = self._probs_operand.swapaxes(-1, -2) @ grad_context
        grad_probs = grad_context @ self._v.swapaxes(-1, -2)
        probs = self._probs
        grad_scores = probs * (grad_probs - (grad_probs * probs).sum(axis=-1, keepdims=True)) * self._scale
        grad_scores = compute_operand(grad_scores)
        grad_q = grad_scores @ self._k
        grad_k = grad_scores.swapaxes(-1, -2) @ self._q
        grad_qkv = np.stack([grad_q, grad_k, grad_v]).transpose(1, 3, 0, 2, 4).reshape(batch, seq, 3 * self.d_model)
        return self.qkv.backward(grad_qkv)
