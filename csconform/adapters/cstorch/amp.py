"""Capability ``amp`` over ``cstorch.amp``: the package's own GradScaler and ``optimizer_step``.

The GradScaler is the package's class, constructed under a backend that reports CSX and driven with
the CS backend's per-iteration duties around it (backend.py): off CS it would scale nothing and
keep no state. Values cross as plain numbers; the package's refusals become the typed errors
(``ValueError`` on construction -> GradScalerConfigError, on ``update(new_scale)`` and ``RuntimeError``
on protocol misuse -> GradScalerUsageError), with the package's message.
"""

from __future__ import annotations

import gc
import inspect
from collections.abc import Mapping
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import backend
from csconform.adapters.cstorch.nn import Loss
from csconform.adapters.cstorch.optim import Optimizer
from csconform.adapters.cstorch.precision import set_half_dtype
from csconform.adapters.cstorch.refusals import refusals
from csconform.adapters.cstorch.tensors import scalar
from csconform.errors import GradScalerConfigError, GradScalerUsageError

__all__ = ["GradScaler", "optimizer_step", "set_half_dtype"]

_USAGE = {RuntimeError: GradScalerUsageError, ValueError: GradScalerUsageError}

# Each GradScaler below starts with a full garbage collection, which scans every tracked object. Most
# of them are torch's and the package's, made at import and alive for the whole process: freezing
# what exists now leaves them out of every later collection (0.16 s each before; the conformance
# state machine builds about 400 scalers). Cyclic garbage that already exists is never collected.
gc.freeze()


def _torch_optimizer(optimizer: Any) -> Any:
    return optimizer.torch if isinstance(optimizer, Optimizer) else optimizer


class GradScaler:
    def __init__(self, *arguments: Any, **options: Any) -> None:
        """The package's GradScaler, built from the arguments as given: its signature and defaults (which
        this constructor shows as its own) decide what they mean, and its refusals what is refused."""
        # The package's amp processing puts each optimizer in a reference cycle (bound methods of
        # itself: amp/_process_optimizer.py), so a dropped optimizer stays registered until the
        # garbage collector runs, and this GradScaler would unscale and step it too.
        gc.collect()
        backend.amp_handle()
        with backend.csx_view(), refusals({ValueError: GradScalerConfigError, TypeError: GradScalerConfigError}):
            self.torch = cstorch.amp.GradScaler(*arguments, **options)

    __init__.__signature__ = inspect.signature(cstorch.amp.GradScaler.__init__)  # type: ignore[attr-defined]

    def get_scale(self) -> float:
        return float(scalar(self.torch.get_scale()))

    def scale(self, loss: Any) -> Any:
        """The scaled loss; a plain number comes back as a float32 number."""
        backend.begin_iteration()
        with refusals(_USAGE):
            if isinstance(loss, Loss):
                return Loss(self.torch.scale(loss.torch))
            return np.float32(self.torch.scale(torch.tensor(np.float32(loss))).item())

    def unscale_(self, optimizer: Any) -> None:
        backend.begin_iteration()
        with refusals(_USAGE):
            self.torch.unscale_(_torch_optimizer(optimizer))

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        return self._step(self.torch.step, optimizer, args, kwargs)

    def step_if_finite(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        return self._step(self.torch.step_if_finite, optimizer, args, kwargs)

    def _step(self, package_step: Any, optimizer: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One of the package's step methods on the package's optimizer, then the schedules of ours
        advanced, as after any training step."""
        backend.begin_iteration()
        with refusals(_USAGE):
            result = package_step(_torch_optimizer(optimizer), *args, **kwargs)
        if isinstance(optimizer, Optimizer):
            optimizer.after_step()
        return result

    def clip_gradients_and_return_isfinite(self, optimizers: Any) -> bool:
        group = [optimizers] if isinstance(optimizers, Optimizer) else list(optimizers)
        with refusals(_USAGE):
            finite = self.torch.clip_gradients_and_return_isfinite([_torch_optimizer(o) for o in group])
        return bool(scalar(finite))

    def update(self, new_scale: float | None = None) -> None:
        try:
            with refusals(_USAGE):
                self.torch.update(new_scale)
        finally:
            backend.end_iteration()

    def state_dict(self) -> dict[str, float | int]:
        return {key: scalar(value) for key, value in self.torch.state_dict().items()}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        with refusals({ValueError: GradScalerConfigError, TypeError: GradScalerConfigError}):
            self.torch.load_state_dict(dict(state_dict))


def optimizer_step(loss: Loss, optimizer: Any, grad_scaler: GradScaler, *clipping: Any, **named_clipping: Any) -> Any:
    """``cstorch.amp.optimizer_step`` as one iteration of the CS backend; the clipping arguments
    (``max_gradient_norm``, ``max_gradient_value``: the package's signature, which this function shows
    as its own) go to the package as given."""
    with backend.iteration():
        with refusals({ValueError: GradScalerConfigError, RuntimeError: GradScalerUsageError}):
            result = cstorch.amp.optimizer_step(
                loss.torch,
                _torch_optimizer(optimizer),
                grad_scaler.torch,
                *clipping,
                **named_clipping,
            )
        if isinstance(optimizer, Optimizer):
            optimizer.after_step()  # the schedule's step marks tensors in the iteration's update manager
    return result


optimizer_step.__signature__ = inspect.signature(cstorch.amp.optimizer_step)  # type: ignore[attr-defined]
