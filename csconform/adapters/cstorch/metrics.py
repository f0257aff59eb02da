"""Capability ``metrics`` over ``cstorch.metrics``: ``AccuracyMetric`` and ``MeanMetric``.

``Accuracy`` and ``Mean`` are the package's metrics; values cross as NumPy. The interface passes
predictions first and accepts logits; the package's ``AccuracyMetric.update(labels, predictions)``
takes class ids, so logits become ids (argmax) on the way, which is what a model's eval step does
before calling the package's metric. ``Metric`` is the base of a user's metric written in interface
terms (NumPy ``update``/``compute``): the package's ``Metric`` is a torch module of tensor state,
so a NumPy metric does not go through it. ``evaluate`` gives a single value as a float and several
values as they are: the package (on its CPU backend, the only one here) does not limit a metric to
one value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import backend
from csconform.adapters.cstorch.tensors import scalar


class Metric:
    """Base of a user's metric: override ``update`` and ``compute``."""

    name = "metric"

    def update(self, *args: Any) -> None:
        raise NotImplementedError

    def compute(self) -> Any:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        return dict(vars(self))


class _PackageMetric(Metric):
    """One of the package's metrics (a torch module with tensor state buffers)."""

    def __init__(self, metric: Any) -> None:
        self.torch = metric

    def compute(self) -> Any:
        return scalar(self.torch.compute())

    def state(self) -> dict[str, Any]:
        return {name: scalar(buffer) for name, buffer in self.torch.named_buffers()}


class Accuracy(_PackageMetric):
    name = "accuracy"

    def __init__(self) -> None:
        backend.cpu_backend()
        super().__init__(cstorch.metrics.AccuracyMetric(self.name))

    def update(self, predictions: Any, labels: Any) -> None:
        predictions, labels = np.asarray(predictions), np.asarray(labels)
        if predictions.ndim == labels.ndim + 1:
            predictions = predictions.argmax(axis=-1)
        self.torch.update(labels=torch.as_tensor(labels), predictions=torch.as_tensor(predictions))


class Mean(_PackageMetric):
    name = "mean"

    def __init__(self) -> None:
        backend.cpu_backend()
        super().__init__(cstorch.metrics.MeanMetric(self.name))

    def update(self, values: Any) -> None:
        self.torch.update(torch.as_tensor(np.asarray(values, dtype=np.float32)))


def final_value(value: Any) -> Any:
    """A single value as a Python float; several values unchanged."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, bool | int | float | np.number) or (isinstance(value, np.ndarray) and value.size == 1):
        return float(np.asarray(value).reshape(()))
    return value


def evaluate(metric: Metric, batches: Iterable[tuple[Any, ...]]) -> Any:
    for batch in batches:
        metric.update(*batch)
    return final_value(metric.compute())


def forget() -> None:
    """Between checks: the package keeps every metric ever made in a class registry."""
    cstorch.metrics.Metric.registry.clear()
