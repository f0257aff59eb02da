"""Capability ``optim`` over ``cstorch.optim``: the package's SGD, Adam and AdamW.

Each param group gets one package scheduler (a plain number becomes ``ConstantLR``, a Python
function of the global step ``LambdaLR`` with that function), targeted at
the group by a tag, and the optimizer's global step is the scheduler's step counter: the package
restores it, like the parameters, when the GradScaler skips a step. As the CS backend does
(``ltc_backend.setup_optimizer``), the learning rate is recomputed from the schedule's step right
before each update; on the bare CPU backend the value left by the previous scheduler step is used,
which differs only after a skipped step.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import cerebras.pytorch as cstorch
import numpy as np
import torch

from csconform.adapters.cstorch import backend
from csconform.adapters.cstorch.nn import Parameter
from csconform.adapters.cstorch.optim import lr_scheduler
from csconform.adapters.cstorch.optim.lr_scheduler import LRScheduler
from csconform.adapters.cstorch.refusals import refusals
from csconform.adapters.cstorch.tensors import scalar
from csconform.arguments import is_real
from csconform.errors import InvalidInputError

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]


class _GroupView(MutableMapping[str, Any]):
    """A package param group as the interface sees it: adapter Parameters, plain numbers."""

    def __init__(self, group: dict[str, Any]) -> None:
        self._group = group

    def __getitem__(self, key: str) -> Any:
        if key == "params":
            return [Parameter.of(tensor) for tensor in self._group["params"]]
        value = self._group[key]
        return scalar(value) if isinstance(value, torch.Tensor) else value

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "params":
            raise InvalidInputError("a param group's parameters cannot be replaced")
        self._group[key] = value

    def __delitem__(self, key: str) -> None:
        del self._group[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key in self._group if key != "tags")

    def __len__(self) -> int:
        return sum(1 for _key in self)


def _as_schedule(lr: Any) -> Any:
    """A number is the package's ``ConstantLR``, a Python function of the step its ``LambdaLR``."""
    if is_real(lr):
        return lr_scheduler.ConstantLR(learning_rate=lr)
    if lr_scheduler.is_function_of_step(lr):
        return lr_scheduler.FunctionLR(lr)
    return lr


def _tensors(params: Any) -> Any:
    """``params`` as the package's optimizer takes them: the interface's Parameters become their
    tensors and a param group keeps its options. Anything else goes to the package as it is, and
    the package's refusal (torch.optim's: an empty list, a non-tensor) is the refusal."""
    if isinstance(params, Parameter):
        return params.torch
    if isinstance(params, Mapping):
        return {key: _tensors(value) if key == "params" else value for key, value in params.items()}
    if isinstance(params, str | bytes) or not isinstance(params, Iterable):
        return params
    return [_tensors(item) for item in params]


def _are_groups(params: Any) -> bool:
    return isinstance(params, list) and all(isinstance(group, Mapping) for group in params)


def _recompute(scheduler_refs: list[weakref.ref]) -> None:
    """The CS backend's pre-step hook: each group's learning rate from its schedule's step."""
    for ref in scheduler_refs:
        scheduler = ref()
        if scheduler is not None:
            scheduler.update_last_value()


class Optimizer:
    package_class: Any = None

    def __init__(self, params: Any, lr: Any, **hyperparameters: Any) -> None:
        backend.cpu_backend()
        default = _as_schedule(lr)
        if not isinstance(default, LRScheduler):
            raise InvalidInputError("lr must be a number, a schedule or a function of the step")
        package_params = _tensors(params)
        # each group's own lr (torch fills the groups' missing options in when it builds them)
        given = [group.get("lr", lr) for group in package_params] if _are_groups(package_params) else [lr]
        # The package builds (and checks) the param groups; their learning rates are set below.
        with refusals({ValueError: InvalidInputError, TypeError: InvalidInputError}):
            self.torch = self.package_class(package_params, lr=float(default(0)), **hyperparameters)
        schedules = [_as_schedule(s) for s in given]
        if not all(isinstance(s, LRScheduler) for s in schedules):
            raise InvalidInputError("lr must be a number, a schedule or a function of the step")
        for index, (group, schedule) in enumerate(zip(self.torch.param_groups, schedules, strict=True)):
            group["tags"] = {f"group{index}"}
            group["lr"] = float(schedule(0))
        self.schedulers = [schedule.bind(self.torch, f"group{i}") for i, schedule in enumerate(schedules)]
        self._schedules = schedules
        # Weak references: a hook holding the schedulers (which hold the optimizer) would keep a
        # finished run's optimizer alive, and the package's GradScaler acts on every live one.
        scheduler_refs = [weakref.ref(scheduler) for scheduler in self.schedulers]
        self.torch.register_step_pre_hook(lambda *_args: _recompute(scheduler_refs))

    @property
    def param_groups(self) -> list[_GroupView]:
        return [_GroupView(group) for group in self.torch.param_groups]

    @property
    def global_step(self) -> int:
        return int(scalar(self.schedulers[0].last_epoch))

    def lr_at(self, step: int) -> list[np.float32]:
        return [np.float32(schedule(step)) for schedule in self._schedules]

    def current_lrs(self) -> list[np.float32]:
        return self.lr_at(self.global_step)

    def step(self, closure: Any = None) -> Any:
        with backend.iteration():
            result = self.torch.step(closure)
            self.after_step()
        return result

    def after_step(self) -> None:
        """Advance the schedules, as a training step does after ``optimizer.step()``."""
        for scheduler in self.schedulers:
            scheduler.step()

    def zero_grad(self) -> None:
        self.torch.zero_grad()

    def state_dict(self) -> dict[str, Any]:
        saved = self.torch.state_dict()
        state = {
            int(index): {key: np.array(scalar(v) if v.ndim == 0 else v.numpy(), copy=True) for key, v in entry.items()}
            for index, entry in saved["state"].items()
        }
        return {
            "global_step": self.global_step,
            "state": state,
            "param_groups": saved["param_groups"],
            "schedulers": [scheduler.state_dict() for scheduler in self.schedulers],
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        try:
            state = {
                int(index): {key: torch.as_tensor(np.asarray(value)) for key, value in entry.items()}
                for index, entry in state_dict["state"].items()
            }
            saved = {"state": state, "param_groups": state_dict["param_groups"]}
            schedulers = state_dict.get("schedulers")
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidInputError(f"not an optimizer state dict: {exc}") from exc
        with refusals({ValueError: InvalidInputError, KeyError: InvalidInputError}):
            self.torch.load_state_dict(saved)
            if schedulers is not None:
                for scheduler, scheduler_state in zip(self.schedulers, schedulers, strict=True):
                    scheduler.load_state_dict(dict(scheduler_state))
            elif "global_step" in state_dict:
                for scheduler in self.schedulers:
                    scheduler.last_epoch = torch.tensor(int(state_dict["global_step"]))
                _recompute([weakref.ref(scheduler) for scheduler in self.schedulers])


class SGD(Optimizer):
    package_class = cstorch.optim.SGD

    def __init__(
        self, params: Any, lr: Any, momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False
    ) -> None:
        super().__init__(params, lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)


class Adam(Optimizer):
    package_class = cstorch.optim.Adam

    def __init__(self, params: Any, lr: Any = 0.001, **hyperparameters: Any) -> None:
        super().__init__(params, lr, **hyperparameters)


class AdamW(Optimizer):
    package_class = cstorch.optim.AdamW

    def __init__(self, params: Any, lr: Any = 0.001, **hyperparameters: Any) -> None:
        super().__init__(params, lr, **hyperparameters)
