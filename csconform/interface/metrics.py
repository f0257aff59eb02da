"""Capability ``metrics``: eval metrics that return one final value (pytorch-limitations#Eval metrics)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class Metric(Protocol):
    """Accumulates over batches; ``compute()`` returns a single value. A user's metric subclasses
    ``Metric`` and overrides ``update`` and ``compute``."""

    def update(self, *args: Any) -> None: ...

    def compute(self) -> Any: ...

    def state(self) -> Mapping[str, Any]:
        """The running (intermediate) state; the CS system refuses it."""


_Metric = Metric  # the Protocol, under a name the module Protocol's attribute does not shadow


class MetricsModule(Protocol):
    """``engine.metrics``"""

    Metric: type[_Metric]
    Accuracy: type[_Metric]
    Mean: type[_Metric]

    def evaluate(self, metric: _Metric, batches: Iterable[tuple[Any, ...]]) -> Any:
        """Update ``metric`` with every batch and return its final value; more than one value is refused
        on the CS system."""
