"""Capability ``lr_schedule`` over ``cstorch.optim.lr_scheduler``.

A schedule here is the package's scheduler class with its arguments, not yet bound to an optimizer:
an optimizer given one as ``lr`` binds it (one scheduler per param group, targeted by a tag); called
with a global step it evaluates the package's closed form at that step. The keyword names are the
interface's, which are the package's except ``MultiplicativeLR(multiplier=)`` (the package says
``coefficient``). Arguments left out take the package's defaults.
"""

from __future__ import annotations

from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch.backend import cpu_backend
from csconform.adapters.cstorch.refusals import refusals
from csconform.errors import InvalidInputError

_RENAMED = {"MultiplicativeLR": {"multiplier": "coefficient"}}


class LRScheduler:
    """An unbound package scheduler: its class and arguments."""

    package_name = ""

    def __init__(self, **kwargs: Any) -> None:
        renames = _RENAMED.get(self.package_name, {})
        self.kwargs = {renames.get(key, key): value for key, value in kwargs.items()}
        self._evaluator: Any = None
        self._evaluate_at(0)  # the package checks its arguments when the scheduler is built

    def bind(self, optimizer: Any, tag: str | None = None) -> Any:
        """The package's scheduler for ``optimizer`` (a ``cstorch.optim.Optimizer``)."""
        kwargs = dict(self.kwargs)
        if "schedulers" in kwargs:
            kwargs["schedulers"] = [schedule.bind(optimizer, tag) for schedule in kwargs["schedulers"]]
        cls = getattr(cstorch.optim.lr_scheduler, self.package_name)
        with refusals({ValueError: InvalidInputError, TypeError: InvalidInputError}):
            return cls(optimizer, **kwargs, param_group_tags=tag) if tag else cls(optimizer, **kwargs)

    def _evaluate_at(self, steps: torch.Tensor | int) -> torch.Tensor:
        if self._evaluator is None:
            cpu_backend()
            dummy = cstorch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
            self._evaluator = self.bind(dummy)
        self._evaluator.last_epoch = steps if isinstance(steps, torch.Tensor) else torch.tensor(steps)
        self._evaluator.update_last_value()
        return torch.as_tensor(self._evaluator.get_last_value()[0])

    def __call__(self, step: Any) -> Any:
        """The package's learning rate at global step ``step`` (int or integer array), as float32."""
        steps = np.asarray(step)
        if steps.ndim == 0:
            return np.float32(self._evaluate_at(torch.tensor(steps.item())).item())
        rates = np.empty(steps.shape, dtype=np.float32)
        for index in np.ndindex(steps.shape):
            rates[index] = self._evaluate_at(torch.tensor(steps[index].item())).item()
        return rates


def _schedule(name: str) -> type[LRScheduler]:
    return type(name, (LRScheduler,), {"package_name": name, "__doc__": f"``cstorch.optim.lr_scheduler.{name}``"})


ConstantLR = _schedule("ConstantLR")
PolynomialLR = _schedule("PolynomialLR")
LinearLR = _schedule("LinearLR")
ExponentialLR = _schedule("ExponentialLR")
InverseExponentialTimeDecayLR = _schedule("InverseExponentialTimeDecayLR")
InverseSquareRootDecayLR = _schedule("InverseSquareRootDecayLR")
CosineDecayLR = _schedule("CosineDecayLR")
CosineAnnealingLR = _schedule("CosineAnnealingLR")
StepLR = _schedule("StepLR")
MultiStepLR = _schedule("MultiStepLR")
MultiplicativeLR = _schedule("MultiplicativeLR")
SequentialLR = _schedule("SequentialLR")
PiecewiseConstantLR = _schedule("PiecewiseConstantLR")
CyclicLR = _schedule("CyclicLR")
OneCycleLR = _schedule("OneCycleLR")
