"""Layers with forward and backward passes, run in mixed precision by the reference engine.

Usage (the contract the runner and the GradScaler rely on)::

    model = nn.fc_mnist()
    loss = nn.cross_entropy(model(x), y)      # Loss; loss.value is a float32 scalar
    (loss * 1024.0).backward()                # gradients multiplied by 1024 land in Parameter.grad
    optimizer.step(); model.zero_grad()

Each module caches what it needs in ``forward`` and implements ``backward(grad_out) -> grad_in``,
adding parameter gradients (float32) into ``Parameter.grad``; see module.py for the small tape that
connects a loss to the top-level module calls that produced its prediction, and loss.py for
``Loss``. Every operation rounds its operands to the half dtype (``precision.compute_operand``)
and accumulates in float32; the weights (``Parameter.data``) stay float32.
"""

from csconform.engine.nn.activations import GELU, ReLU, Tanh
from csconform.engine.nn.attention import MultiHeadSelfAttention, softmax
from csconform.engine.nn.dropout import Dropout
from csconform.engine.nn.embedding import Embedding
from csconform.engine.nn.init import manual_seed
from csconform.engine.nn.linear import Linear
from csconform.engine.nn.loss import CrossEntropyLoss, Loss, MSELoss, cross_entropy, mse_loss
from csconform.engine.nn.models import fc_mnist
from csconform.engine.nn.module import Module, Sequential, backpropagate
from csconform.engine.nn.normalization import LayerNorm
from csconform.engine.nn.parameter import Parameter
from csconform.engine.nn.transformer import TransformerBlock

__all__ = [
    "GELU",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Loss",
    "MSELoss",
    "Module",
    "MultiHeadSelfAttention",
    "Parameter",
    "ReLU",
    "Sequential",
    "Tanh",
    "TransformerBlock",
    "backpropagate",
    "cross_entropy",
    "fc_mnist",
    "manual_seed",
    "mse_loss",
    "softmax",
]
