"""Capability ``metrics``: eval metrics that return one final value (seed 000, "Eval metrics")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class Metric(Protocol):
    """Accumulates over batches; ``compute()`` returns a single value."""

    def update(self, *args: Any) -> None: ...

    def compute(self) -> Any: ...


_Metric = Metric  # the Protocol, under a name the module Protocol's attribute does not shadow


class MetricsModule(Protocol):
    """``engine.metrics``"""

    Metric: type[_Metric]
    Accuracy: type[_Metric]
    Mean: type[_Metric]

    def evaluate(self, metric: _Metric, batches: Iterable[tuple[Any, ...]]) -> Any:
        """Update ``metric`` with every batch and return its final value; more than one value is refused
        on the CS system."""
