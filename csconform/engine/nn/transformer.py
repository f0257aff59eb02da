"""A pre-norm transformer block (GPT / BERT style): attention and MLP, each with a residual."""

from __future__ import annotations

from typing import Any

from csconform.arguments import check_float_array
from csconform.engine.nn.activations import GELU
from csconform.engine.nn.attention import MultiHeadSelfAttention
from csconform.engine.nn.dropout import Dropout
from csconform.engine.nn.linear import Linear
from csconform.engine.nn.module import Array, Module
from csconform.engine.nn.normalization import LayerNorm
from csconform.engine.nn.parameter import layer_size
from csconform.engine.precision import compute_operand


class TransformerBlock(Module):
    """h = x + Dropout(Attn(LN1(x)));  y = h + Dropout(MLP(LN2(h))),  MLP = Linear-GELU-Linear.

    The residual additions read 16-bit operands like every other operation.
    """

    def __init__(
        self, d_model: int, num_heads: int, d_ff: int | None = None, causal: bool = False, dropout: float = 0.0
    ) -> None:
        d_model = layer_size("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else layer_size("d_ff", d_ff)
        self.d_model = d_model
        self.ln1 = LayerNorm(d_model)
        self.attn = MultiHeadSelfAttention(d_model, num_heads, causal=causal)
        self.attn_dropout = Dropout(dropout, seed=1)
        self.ln2 = LayerNorm(d_model)
        self.fc1 = Linear(d_model, d_ff)
        self.act = GELU()
        self.fc2 = Linear(d_ff, d_model)
        self.mlp_dropout = Dropout(dropout, seed=2)

    def forward(self, x: Any) -> Array:
        x = compute_operand(check_float_array("input", x, last_dim=self.d_model))  # read by ln1 and the residual
        h = x + compute_operand(self.attn_dropout(self.attn(self.ln1.forward_rounded(x))))
        h = compute_operand(h)  # read by ln2 and the residual
        mlp = self.mlp_dropout(self.fc2(self.act(self.fc1(self.ln2.forward_rounded(h)))))
        return h + compute_operand(mlp)

    def backward(self, grad_out: Array) -> Array:
        grad_mlp = self.fc1.backward(self.act.backward(self.fc2.backward(self.mlp_dropout.backward(grad_out))))
        grad_h = grad_out + self.ln2.backward(grad_mlp)
        return grad_h + self.ln1.backward(self.attn.backward(self.attn_dropout.backward(grad_h)))
