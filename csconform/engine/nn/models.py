"""Ready-made models used by the runner, the benchmarks and the tests."""

from __future__ import annotations

from csconform.engine.nn.activations import ReLU
from csconform.engine.nn.linear import Linear
from csconform.engine.nn.module import Sequential


def fc_mnist(hidden: int = 500, inputs: int = 784, classes: int = 10) -> Sequential:
    """The fully connected MNIST classifier 784-500-500-10 with ReLU activations."""
    return Sequential(Linear(inputs, hidden), ReLU(), Linear(hidden, hidden), ReLU(), Linear(hidden, classes))
