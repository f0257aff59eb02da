"""Eval metrics that yield one final value.

pytorch-limitations#Eval metrics: on the CS system a metric may return only a single result value, the
final one; its intermediate state cannot be read. A :class:`Metric` accumulates with ``update`` and
finishes with ``compute``; :func:`evaluate` runs one over eval batches and checks the result.
On the cpu target several values (a tuple, list, dict or array) and the running state are allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from csconform.arguments import check_real_array, check_type
from csconform.engine import context
from csconform.errors import InvalidInputError, MetricError


def is_single_value(value: Any) -> bool:
    """A Python number, a NumPy scalar, or an array holding exactly one element (not a container)."""
    if isinstance(value, bool | int | float | np.number | np.bool_):
        return True
    return isinstance(value, np.ndarray) and value.size == 1


def check_result(name: str, value: Any) -> Any:
    """Return a metric's final result; on cs refuse anything but one value."""
    if context.on_cs() and not is_single_value(value):
        raise MetricError(
            f"eval metric {name!r} returned {type(value).__name__} {value!r}; on the CS system an eval "
            "metric may return only a single final value"
        )
    if is_single_value(value):
        return float(np.asarray(value).reshape(()))
    return value


class Metric:
    """Base of eval metrics: override ``update`` and ``compute``."""

    name = "metric"

    def update(self, *args: Any) -> None:
        raise NotImplementedError

    def compute(self) -> Any:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """The running state; readable on the cpu target only."""
        if context.on_cs():
            raise MetricError(
                f"the intermediate state of eval metric {self.name!r} cannot be retrieved on the CS system; "
                "only the final value is returned"
            )
        return dict(vars(self))


class Accuracy(Metric):
    """Fraction of predictions equal to their labels (predictions given as class ids or logits)."""

    name = "accuracy"

    def __init__(self) -> None:
        self.correct = 0
        self.total = 0

    def update(self, predictions: Any, labels: Any) -> None:
        predictions = check_real_array("predictions", predictions)
        labels = check_real_array("labels", labels)
        if predictions.ndim == labels.ndim + 1:
            predictions = predictions.argmax(axis=-1)
        if predictions.shape != labels.shape:
            raise InvalidInputError(
                f"accuracy needs predictions and labels of one shape, got {predictions.shape} and {labels.shape}"
            )
        self.correct += int((predictions == labels).sum())
        self.total += int(labels.size)

    def compute(self) -> float:
        if self.total == 0:
            raise InvalidInputError("accuracy of zero samples is undefined")
        return self.correct / self.total


class Mean(Metric):
    """Mean of all values seen (e.g. the eval loss)."""

    name = "mean"

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def update(self, values: Any) -> None:
        values = check_real_array("values", values).astype(np.float64)
        self.total += float(values.sum())
        self.count += int(values.size)

    def compute(self) -> float:
        if self.count == 0:
            raise InvalidInputError("mean of zero values is undefined")
        return self.total / self.count


def evaluate(metric: Metric, batches: Iterable[tuple[Any, ...]]) -> Any:
    """Feed every batch to ``metric.update`` and return its checked final value."""
    check_type("metric", metric, Metric, "a Metric")
    if not isinstance(batches, Iterable) or isinstance(batches, str | bytes):
        raise InvalidInputError(f"batches must be an iterable of tuples, got {type(batches).__name__}")
    for batch in batches:
        if not isinstance(batch, tuple):
            raise InvalidInputError(f"each batch must be a tuple of update() arguments, got {type(batch).__name__}")
        metric.update(*batch)
    return check_result(metric.name, metric.compute())
