"""Losses and the ``Loss`` value that starts the backward pass.

``loss_fn(prediction, target)`` returns a :class:`Loss`:

* ``loss.value`` is the float32 scalar (``float(loss)`` works too);
* ``loss.backward()`` computes d(loss)/d(prediction) in float32 and runs the backward pass of the
  module(s) that produced ``prediction`` (see module.py), accumulating into ``Parameter.grad``;
* ``loss * scale`` (or ``scale * loss``) is a scaled Loss: its value is multiplied by ``scale`` and
  its ``backward()`` seeds the chain with ``scale``, so every gradient comes out multiplied by the
  scale. This is what loss scaling (the GradScaler's ``scale(loss)``) needs; the multiplied
  gradients pass through the 16-bit rounding of the backward pass like any others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from csconform.arguments import check_float_array, check_integer_array
from csconform.engine.nn.module import Array, backpropagate
from csconform.engine.precision import compute_operand
from csconform.errors import InvalidInputError
from csconform.interface.kit import loss as kit


class Loss(kit.Loss):
    """A loss value with the prediction it was computed from and the gradient of the loss by it."""

    def __init__(
        self, value: float | np.floating, prediction: Array, grad_fn: Callable[[np.float32], Array], scale: float = 1.0
    ) -> None:
        self._unscaled = np.float32(value)
        self._prediction = prediction
        self._grad_fn = grad_fn
        self.scale = np.float32(scale)

    @property
    def value(self) -> np.float32:
        return np.float32(self._unscaled * self.scale)

    def scaled(self, factor: float) -> Loss:
        return Loss(self._unscaled, self._prediction, self._grad_fn, scale=float(self.scale) * factor)

    def backward(self) -> None:
        """Accumulate scale * d(loss)/d(parameter) into every parameter's ``grad``."""
        backpropagate(self._prediction, self._grad_fn(self.scale))

    def __repr__(self) -> str:
        return f"Loss(value={self.value!r}, scale={self.scale!r})"


def cross_entropy(logits: Any, targets: Any) -> Loss:
    """Mean softmax cross-entropy; ``logits`` (..., classes), integer ``targets`` (...)."""
    raw = logits
    logits = check_float_array("logits", logits)
    targets = check_integer_array("targets", targets)
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise InvalidInputError(f"targets shape {targets.shape} must equal logits shape without the class axis")
    if targets.dtype.kind not in "iu":
        raise InvalidInputError(f"targets must be integer class indices, got dtype {targets.dtype}")
    classes = logits.shape[-1]
    if targets.size and (targets.min() < 0 or targets.max() >= classes):
        raise InvalidInputError(f"targets must lie in [0, {classes})")
    z = compute_operand(logits).reshape(-1, classes)
    flat_targets = targets.reshape(-1)
    count = z.shape[0]
    shifted = z - z.max(axis=1, keepdims=True)
    log_sum_exp = np.log(np.exp(shifted).sum(axis=1))
    picked = shifted[np.arange(count), flat_targets]
    value = (log_sum_exp - picked).sum(dtype=np.float32) / np.float32(count)

    def grad_fn(seed: np.float32) -> Array:
        probs = np.exp(shifted - log_sum_exp[:, None])
        probs[np.arange(count), flat_targets] -= np.float32(1.0)
        return (probs * (seed / np.float32(count))).reshape(logits.shape)

    return Loss(value, raw, grad_fn)


def mse_loss(prediction: Any, target: Any) -> Loss:
    """Mean squared error over all elements."""
    raw = prediction
    prediction = check_float_array("prediction", prediction)
    target = check_float_array("target", target)
    if target.shape != prediction.shape:
        raise InvalidInputError(f"target shape {target.shape} does not match prediction shape {prediction.shape}")
    diff: NDArray[np.float32] = compute_operand(prediction) - compute_operand(target)
    value = (diff * diff).sum(dtype=np.float32) / np.float32(diff.size)

    def grad_fn(seed: np.float32) -> Array:
        return diff * (np.float32(2.0) * seed / np.float32(diff.size))

    return Loss(value, raw, grad_fn)


class CrossEntropyLoss:
    def __call__(self, logits: Any, targets: Any) -> Loss:
        return cross_entropy(logits, targets)


class MSELoss:
    def __call__(self, prediction: Any, target: Any) -> Loss:
        return mse_loss(prediction, target)
