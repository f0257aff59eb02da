"""Capability ``amp``: automatic mixed precision, the GradScaler and ``optimizer_step`` (amp-api).

Gradients cross as float32 arrays on the parameters (``Parameter.grad``). Whatever gradients the
parameters hold when ``unscale_``/``step`` runs are the scaled gradients of this iteration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from csconform.interface.nn import Loss
from csconform.interface.optim import Optimizer


class GradScaler(Protocol):
    """``engine.amp.GradScaler``: static or dynamic loss scaling, optionally with global clipping."""

    def __init__(
        self,
        loss_scale: str | float | None = None,
        init_scale: float | None = None,
        steps_per_increase: int | None = None,
        min_loss_scale: float | None = None,
        max_loss_scale: float | None = None,
        overflow_tolerance: float = 0.0,
        max_gradient_norm: float | None = None,
    ) -> None: ...

    def scale(self, loss: Loss) -> Loss:
        """The loss multiplied by the current scale, ready for ``backward()``."""

    def get_scale(self) -> float:
        """The current loss scale."""

    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide the optimizer's gradients by the scale, in place."""

    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless done) and step the optimizer; skip the step on non-finite gradients."""

    def step_if_finite(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        """Step the optimizer only if this iteration's gradients were finite."""

    def clip_gradients_and_return_isfinite(self, optimizers: Any) -> bool:
        """Clip (DLS + GCC) and say whether the global gradient norm is finite."""

    def update(self, new_scale: float | None = None) -> None:
        """Apply the loss-scale update rule once, after all optimizers stepped."""

    def state_dict(self) -> Mapping[str, float | int]:
        """The scaler's state as plain numbers (loss_scale, and the DLS counters)."""

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by ``state_dict``."""


_GradScaler = GradScaler  # the Protocol, under a name the module Protocol's attribute does not shadow


class AmpModule(Protocol):
    """``engine.amp``"""

    GradScaler: type[_GradScaler]

    def set_half_dtype(self, value: Any) -> Any:
        """The same function as ``precision.set_half_dtype``."""

    def optimizer_step(
        self,
        loss: Loss,
        optimizer: Optimizer,
        grad_scaler: _GradScaler,
        max_gradient_norm: float | None = None,
        max_gradient_value: float | None = None,
    ) -> Any:
        """Scale the loss, backward, unscale, clip (norm or value), step, update, zero the gradients."""
