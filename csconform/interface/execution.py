"""Capabilities ``execution`` and ``appliance``: pipelined and weight-streaming execution
(pipelined-execution, appliance-mode-blog), and the appliance that assembles up to 192 systems."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Footprint(Protocol):
    """What a model needs on the wafer: weights, activations, optimizer slots."""

    def __init__(
        self,
        parameters: int,
        activation_elements_per_sample: int,
        optimizer_slots_per_weight: int = 2,
        largest_layer_parameters: int | None = None,
    ) -> None: ...


class Executor(Protocol):
    def forward_backward(self, features: Any, labels: Any, loss_fn: Callable[..., Any], loss_scale: float) -> float: ...

    def apply_update(self, update: Callable[[], Any]) -> Any: ...


class SwarmX(Protocol):
    @staticmethod
    def reduce(gradients: list[Any]) -> Any:
        """The sum of the systems' weight gradients."""


_Footprint = Footprint  # the Protocol, under a name the module Protocol's attribute does not shadow


class ExecutionModule(Protocol):
    """``engine.execution``"""

    Footprint: type[_Footprint]
    PipelinedExecutor: type[Executor]
    WeightStreamingExecutor: type[Executor]
    SwarmX: type[SwarmX]

    def footprint_of(self, model: Any, step_graph: Any, batch_size: int, optimizer: Any = None) -> _Footprint: ...

    def check_pipelined_fits(self, footprint: _Footprint, batch_size: int, system: Any) -> None:
        """Refuse a pipelined model that does not fit one wafer."""

    def check_weight_streaming_fits(self, footprint: _Footprint, batch_size: int, system: Any) -> None:
        """Refuse a weight-streaming layer or batch that does not fit one wafer."""


class Appliance(Protocol):
    def __init__(self, num_systems: int = 1, *, installation: str = "appliance", wafer: str = "WSE-2") -> None: ...

    def default_execution(self) -> str: ...

    def resources(self, execution: str | None = None) -> Any: ...

    def runner(self, model: Any, loss_fn: Callable[..., Any], optimizer: Any = None, **options: Any) -> Any: ...


class ApplianceModule(Protocol):
    """``engine.appliance``"""

    Appliance: type[Appliance]
