"""Capability ``metrics`` over ``cstorch.metrics``: ``AccuracyMetric`` and ``MeanMetric``.

``Accuracy`` and ``Mean`` are the package's metrics; values cross as NumPy. The interface passes
predictions first and accepts logits; the package's ``AccuracyMetric.update(labels, predictions)``
takes class ids, so logits become ids (argmax) on the way, which is what a model's eval step does
before calling the package's metric. ``Metric``, the base of a user's metric written in interface
terms (NumPy ``update``/``compute``, state in plain attributes), is a subclass of the package's
``cstorch.metrics.Metric``: a user's metric is one of the package's, named and registered by it,
its updates counted and its result cached by the package's wrappers. ``evaluate`` gives a single
value as a float and several values as they are: the package (on its CPU backend, the only one
here) does not limit a metric to one value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import backend
from csconform.adapters.cstorch.tensors import scalar

# what the package's Metric and torch's Module keep on the instance besides a user metric's state
_BOOKKEEPING = frozenset({"training", "name", "reset", "update", "compute"})


class Metric(cstorch.metrics.Metric):
    """Base of a user's metric: override ``update`` and ``compute`` (and keep state in attributes).

    The package's ``Metric.__init__(name)`` runs when the metric is made, so a subclass need not
    call ``super().__init__()``; ``name`` is the class attribute.
    """

    name = "metric"

    def __new__(cls, *args: Any, **kwargs: Any) -> Metric:
        metric = super().__new__(cls)
        backend.cpu_backend()
        cstorch.metrics.Metric.__init__(metric, cls.name)
        return metric

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Already made a package metric by ``__new__``."""

    def reset(self) -> None:
        """A user's metric starts its own state in ``__init__``."""

    def update(self, *args: Any) -> None:
        raise NotImplementedError

    def compute(self) -> Any:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """The attributes the user's metric keeps (not the package's bookkeeping)."""
        return {key: value for key, value in vars(self).items() if not key.startswith("_") and key not in _BOOKKEEPING}


class _PackageMetric:
    """One of the package's metrics (a torch module with tensor state buffers)."""

    def __init__(self, metric: Any) -> None:
        self.torch = metric

    def update(self, *args: Any) -> None:
        raise NotImplementedError

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


def evaluate(metric: Metric | _PackageMetric, batches: Iterable[tuple[Any, ...]]) -> Any:
    for batch in batches:
        metric.update(*batch)
    return final_value(metric.compute())


def forget() -> None:
    """Between checks: the package keeps every metric ever made in a class registry."""
    cstorch.metrics.Metric.registry.clear()
