"""Capability ``lr_schedule`` over ``cstorch.optim.lr_scheduler``.

A schedule here is the package's scheduler class with its arguments, not yet bound to an optimizer:
an optimizer given one as ``lr`` binds it (one scheduler per param group, targeted by a tag); called
with a global step it evaluates the package's closed form at that step. The keyword names are the
interface's, which are the package's except ``MultiplicativeLR(multiplier=)`` (the package says
``coefficient``). Arguments left out take the package's defaults.

Evaluation: the package's closed forms (``_get_closed_form`` of ``optim/scheduler.py``) are
element-wise torch expressions of the scheduler's ``last_epoch`` tensor, so the adapter sets
``last_epoch`` to a tensor of steps and evaluates a whole array at once. A ``SequentialLR`` (and
``PiecewiseConstantLR``, built on it) keeps the local step of each part in the part's own
``last_epoch``, which the package's ``step()`` advances only once the part's milestone has passed:
the adapter sets each part to ``max(0, t - milestone)`` as those steps would. Torch computes some
element-wise functions (``pow``) on a SIMD path that can differ by one ulp from its scalar path, so
every evaluation, a single step included, goes through whole blocks of ``_BLOCK`` steps: a step's
rate does not depend on how it was asked for.

A plain callable of the global step, given as an optimizer's ``lr``, becomes the package's
``LambdaLR`` with the function supplied by overriding ``set_value_lambda`` (the package's documented
way to give it) and an initial learning rate of 1.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch.backend import cpu_backend
from csconform.adapters.cstorch.refusals import refusals
from csconform.errors import InvalidInputError

_RENAMED = {"MultiplicativeLR": {"multiplier": "coefficient"}}
_BLOCK = 4096  # a multiple of every SIMD width, below torch's parallel grain size (32768)


def set_global_step(scheduler: Any, steps: torch.Tensor) -> None:
    """Put a package scheduler at global step(s) ``steps``, with its parts at their local steps."""
    scheduler.last_epoch = steps
    parts = getattr(scheduler, "_schedulers", None)
    if parts:
        set_global_step(parts[0], steps)
        for part, milestone in zip(parts[1:], scheduler._milestones, strict=True):
            set_global_step(part, torch.clamp(steps - milestone, min=0))


class LRScheduler:
    """An unbound package scheduler: its class and arguments."""

    package_name = ""

    def __init__(self, **kwargs: Any) -> None:
        renames = _RENAMED.get(self.package_name, {})
        self.kwargs = {renames.get(key, key): value for key, value in kwargs.items()}
        schedulers = self.kwargs.get("schedulers")
        if schedulers is not None and not (
            isinstance(schedulers, list | tuple) and all(isinstance(s, LRScheduler) for s in schedulers)
        ):
            raise InvalidInputError("schedulers must be a list of schedules of the lr_scheduler module")
        self._evaluator: Any = None
        self._evaluator_or_build()  # the package checks its arguments when the scheduler is built

    def package_class(self) -> Any:
        return getattr(cstorch.optim.lr_scheduler, self.package_name)

    def bind(self, optimizer: Any, tag: str | None = None) -> Any:
        """The package's scheduler for ``optimizer`` (a ``cstorch.optim.Optimizer``)."""
        kwargs = dict(self.kwargs)
        if "schedulers" in kwargs:
            kwargs["schedulers"] = [schedule.bind(optimizer, tag) for schedule in kwargs["schedulers"]]
        cls = self.package_class()
        with refusals({ValueError: InvalidInputError, TypeError: InvalidInputError}):
            return cls(optimizer, **kwargs, param_group_tags=tag) if tag else cls(optimizer, **kwargs)

    def _evaluator_or_build(self) -> Any:
        if self._evaluator is None:
            cpu_backend()
            dummy = cstorch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
            self._evaluator = self.bind(dummy)
        return self._evaluator

    def _rates(self, steps: torch.Tensor) -> np.ndarray:
        """The closed form at a flat tensor of steps, a block of ``_BLOCK`` steps at a time."""
        evaluator = self._evaluator_or_build()
        rates = np.empty(steps.numel(), dtype=np.float32)
        for start in range(0, steps.numel(), _BLOCK):
            chunk = steps[start : start + _BLOCK]
            block = torch.zeros(_BLOCK, dtype=steps.dtype)
            block[: chunk.numel()] = chunk
            set_global_step(evaluator, block)
            values = torch.broadcast_to(torch.as_tensor(evaluator._get_closed_form()), (_BLOCK,))
            rates[start : start + chunk.numel()] = values[: chunk.numel()].to(torch.float32).numpy()
        return rates

    def __call__(self, step: Any) -> Any:
        """The package's learning rate at global step ``step`` (int or integer array), as float32.

        An ndarray (0-d included) gives an ndarray of its shape; a Python or NumPy scalar a 0-d
        ``np.float32``. Steps reach the package as they are (integers as int64): it checks none.
        """
        steps = np.asarray(step)
        if steps.dtype.kind in "iu":
            steps = steps.astype(np.int64)
        rates = self._rates(torch.as_tensor(steps).reshape(-1)).reshape(steps.shape)
        if isinstance(step, np.ndarray) or rates.ndim:
            return rates
        return np.float32(rates[()])


class FunctionLR(LRScheduler):
    """A Python function of the global step, as the package's ``LambdaLR`` with that function."""

    package_name = "LambdaLR"

    def __init__(self, function: Callable[[int], Any]) -> None:
        self.function = function
        super().__init__(initial_learning_rate=1.0)

    def package_class(self) -> Any:
        function = self.function

        def value_at(epoch: torch.Tensor) -> torch.Tensor:
            return torch.tensor(float(function(int(epoch))), dtype=torch.float32)

        class _FunctionOfStep(cstorch.optim.lr_scheduler.LambdaLR):
            def set_value_lambda(self) -> list[Callable[[torch.Tensor], torch.Tensor]]:
                return [value_at]

        return _FunctionOfStep

    def _rates(self, steps: torch.Tensor) -> np.ndarray:
        """The function is Python, called one step at a time, as the package calls it."""
        evaluator = self._evaluator_or_build()
        rates = np.empty(steps.numel(), dtype=np.float32)
        for index in range(steps.numel()):
            set_global_step(evaluator, steps[index])
            rates[index] = evaluator._get_closed_form().item()
        return rates


def is_function_of_step(value: Any) -> bool:
    return callable(value) and not isinstance(value, LRScheduler | numbers.Real)


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
