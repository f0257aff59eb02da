"""Optimizers whose learning rate is a function of the global step, updating FP32 master weights.

The update is computed in float32 on the float32 master weights (``Parameter.data``); only the
cpu-only "half" compute precision stores the result rounded to the half dtype
(``precision.stored_weights``).

On the CS system the graph is static, so the learning rate is not a Python scalar that a scheduler
overwrites between iterations; it is a tensor computed from a schedule ``f`` at the global step.
``Optimizer.step()`` applies update number ``global_step`` with learning rate ``f(global_step)`` and
then increments ``global_step``. A plain number passed as ``lr`` is wrapped as ``ConstantLR``.

Assigning a scalar to ``param_groups[i]["lr"]`` (the usual PyTorch scheduler paradigm) is refused on
target cs with ``LRSchedulerError``; on cpu the group then uses that constant.

``step()`` first computes every new weight and state array and only then commits them all, so an
error raised while computing leaves parameters, state and ``global_step`` untouched. A caller that
must skip a step (the GradScaler after a non-finite gradient) simply does not call ``step()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from csconform.arguments import check_callable, check_flag, check_integer, check_mapping, check_real, is_real
from csconform.engine import context
from csconform.engine.nn.parameter import Parameter
from csconform.engine.optim.lr_scheduler import ConstantLR
from csconform.engine.optim.rounding import multiply_add
from csconform.engine.precision import stored_weights
from csconform.errors import InvalidInputError, LRSchedulerError

Array = NDArray[np.float32]
Schedule = Callable[[int], Any]

_SCALAR_LR_MESSAGE = (
    "setting a scalar learning rate in an optimizer param group is not supported on the CS system: "
    "the graph is static, so the learning rate must be a function of the global step. Pass a schedule "
    "when building the optimizer instead, e.g. lr=PolynomialLR(initial_learning_rate=..., "
    "end_learning_rate=..., total_iters=...) from csconform.engine.optim.lr_scheduler"
)


def _check_lr(value: object) -> object:
    """A learning rate is a non-negative finite number or a callable schedule of the global step."""
    if is_real(value):
        check_real("learning rate", value, minimum=0.0)
        return value
    if callable(value):
        return value
    raise InvalidInputError(f"lr must be a number or a schedule of the global step, got {type(value).__name__}")


class ParamGroup(MutableMapping):
    """One parameter group: ``params`` plus hyperparameters; guards scalar writes to ``lr``."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values: dict[str, Any] = dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "lr":
            value = _check_lr(value)
            if is_real(value) and context.on_cs():
                raise LRSchedulerError(_SCALAR_LR_MESSAGE)
        self._values[key] = value

    def __delitem__(self, key: str) -> None:
        raise InvalidInputError(f"param group entries cannot be deleted ({key!r})")

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"ParamGroup({self._values!r})"


class Optimizer:
    """Base class: param groups, the global step, the learning-rate tensor, state dicts.

    Subclasses define ``defaults`` checks in ``__init__`` and ``_update(param, grad, state, lr,
    group) -> (new_data, new_state)``, a pure function in float32.
    """

    def __init__(self, params: Iterable[Parameter] | Iterable[Mapping[str, Any]], defaults: dict[str, Any]) -> None:
        defaults = dict(defaults)
        defaults["lr"] = self._as_schedule(_check_lr(defaults["lr"]))
        self.defaults = defaults
        self.param_groups: list[ParamGroup] = []
        for group in self._groups(params):
            self._add_group(group)
        self.state: dict[int, dict[str, Any]] = {}  # keyed by the parameter's position (see _indexed)
        self.global_step = 0

    @staticmethod
    def _as_schedule(lr: object) -> object:
        return ConstantLR(learning_rate=float(lr)) if is_real(lr) else lr  # type: ignore[arg-type]

    @staticmethod
    def _groups(params: Any) -> list[Mapping[str, Any]]:
        if isinstance(params, Parameter | str | bytes | Mapping) or not isinstance(params, Iterable):
            raise InvalidInputError("params must be an iterable of Parameters or of param-group dicts")
        items = list(params)
        if not items:
            raise InvalidInputError("optimizer got an empty parameter list")
        if all(isinstance(item, Parameter) for item in items):
            return [{"params": items}]
        if all(isinstance(item, Mapping) for item in items):
            return items
        raise InvalidInputError("params must be an iterable of Parameters or of param-group dicts")

    def _add_group(self, group: Mapping[str, Any]) -> None:
        if "params" not in group:
            raise InvalidInputError("a param group needs a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Parameter) else list(params)
        if not all(isinstance(p, Parameter) for p in params):
            raise InvalidInputError("param groups may only contain Parameters")
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise InvalidInputError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(self.defaults)}")
        values = {**self.defaults, **group, "params": params}
        values["lr"] = self._as_schedule(_check_lr(values["lr"]))
        self._check_hyperparameters(values)
        self.param_groups.append(ParamGroup(values))

    def _check_hyperparameters(self, group: Mapping[str, Any]) -> None:
        """Subclasses refuse bad hyperparameters with InvalidInputError."""

    # --- the learning rate as a tensor of the global step ---

    def lr_at(self, step: int) -> list[np.float32]:
        """The learning rate of every group for update number ``step``."""
        return [self._group_lr(group, step) for group in self.param_groups]

    def current_lrs(self) -> list[np.float32]:
        """The learning rates the next ``step()`` will use."""
        return self.lr_at(self.global_step)

    @staticmethod
    def _group_lr(group: Mapping[str, Any], step: int) -> np.float32:
        lr = group["lr"]
        value = np.float32(lr if is_real(lr) else lr(step))
        if not (np.isfinite(value) and value >= 0):
            raise InvalidInputError(f"the learning rate schedule gave {value!r} at global step {step}; need >= 0")
        return value

    # --- updates ---

    def _indexed(self) -> Iterator[tuple[int, Parameter, ParamGroup]]:
        index = 0
        for group in self.param_groups:
            for param in group["params"]:
                yield index, param, group
                index += 1

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Apply one FP32 update to every parameter that has a gradient, then advance global_step.

        As in PyTorch, a ``closure`` is called first (it may recompute the loss and the gradients)
        and its result is returned.
        """
        result = None if closure is None else check_callable("closure", closure)()
        planned = []
        for index, param, group in self._indexed():
            if param.grad is None:
                continue
            lr = self._group_lr(group, self.global_step)
            new_data, new_state = self._update(param.data, param.grad, self.state.get(index, {}), lr, group)
            planned.append((index, param, stored_weights(new_data), new_state))
        for index, param, new_data, new_state in planned:
            param.data[...] = new_data
            if new_state:  # a parameter without state (SGD without momentum) has no entry (OPTIM-017)
                self.state[index] = new_state
        self.global_step += 1
        return result

    def _update(
        self, data: Array, grad: Array, state: dict[str, Any], lr: np.float32, group: Mapping[str, Any]
    ) -> tuple[Array, dict[str, Any]]:
        raise NotImplementedError

    def zero_grad(self) -> None:
        for _index, param, _group in self._indexed():
            param.grad = None

    # --- checkpoints ---

    def state_dict(self) -> dict[str, Any]:
        """``global_step``, per-parameter state (copied arrays) and the groups' hyperparameters.

        ``lr`` is stored as the schedule object (or number) itself; ``params`` as parameter positions.
        """
        groups = []
        for group_index, group in enumerate(self.param_groups):
            first = sum(len(g["params"]) for g in self.param_groups[:group_index])
            entry = {key: value for key, value in group.items() if key != "params"}
            entry["params"] = list(range(first, first + len(group["params"])))
            groups.append(entry)
        state = {
            index: {key: np.copy(value) for key, value in entries.items()} for index, entries in self.state.items()
        }
        return {"global_step": self.global_step, "state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()`` of an optimizer built over parameters of the same shapes.

        Everything is checked before anything is applied, so a refused state dict changes nothing.
        """
        self._apply_state(*self._checked_state(state_dict))

    def _checked_state(
        self, state_dict: Mapping[str, Any]
    ) -> tuple[int, dict[int, dict[str, Any]], list[dict[str, Any]]]:
        """(global step, per-parameter state, each group's hyperparameters) of ``state_dict``, checked."""
        check_mapping("state_dict", state_dict)
        try:
            global_step = state_dict["global_step"]
            groups = state_dict["param_groups"]
            state = state_dict["state"]
        except (KeyError, TypeError) as exc:
            raise InvalidInputError(f"not an optimizer state dict: missing {exc}") from exc
        check_integer("global_step", global_step, minimum=0)
        if not isinstance(state, Mapping) or not isinstance(groups, list | tuple):
            raise InvalidInputError("not an optimizer state dict: 'state' must be a mapping, 'param_groups' a list")
        if (
            len(groups) != len(self.param_groups)
            or not all(isinstance(saved, Mapping) and isinstance(saved.get("params"), list | tuple) for saved in groups)
            or any(
                len(saved["params"]) != len(own["params"]) for saved, own in zip(groups, self.param_groups, strict=True)
            )
        ):
            raise InvalidInputError("the state dict's param groups do not match this optimizer's")
        shapes = {index: param.shape for index, param, _group in self._indexed()}
        new_state: dict[int, dict[str, Any]] = {}
        for index, entries in state.items():
            if index not in shapes or not isinstance(entries, Mapping):
                raise InvalidInputError(f"state for unknown parameter position {index!r}")
            new_state[index] = {key: np.copy(value) for key, value in entries.items()}
            for key, value in new_state[index].items():
                if value.ndim and value.shape != shapes[index]:
                    raise InvalidInputError(f"state {key!r} of parameter {index} has shape {value.shape}")
                if value.dtype.kind not in "biuf" or not np.isfinite(value).all():
                    raise InvalidInputError(f"state {key!r} of parameter {index} must hold finite numbers")
        hyperparameters = []
        for saved, own in zip(groups, self.param_groups, strict=True):
            values = {**own._values, **{key: value for key, value in saved.items() if key != "params"}}
            self._check_hyperparameters(values)
            hyperparameters.append(values)
        return int(global_step), new_state, hyperparameters

    def _apply_state(
        self, global_step: int, state: dict[int, dict[str, Any]], hyperparameters: list[dict[str, Any]]
    ) -> None:
        for own, values in zip(self.param_groups, hyperparameters, strict=True):
            own._values.update(values)  # restoring a checkpoint is not a mid-run scalar write
        self.state = state
        self.global_step = global_step


class SGD(Optimizer):
    """SGD with optional momentum (buffer = momentum*buffer + g, from a zero buffer), Nesterov and L2
    weight decay; without momentum a parameter keeps no state."""

    def __init__(
        self, params: Any, lr: Any, momentum: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False
    ) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "nesterov": nesterov})

    def _check_hyperparameters(self, group: Mapping[str, Any]) -> None:
        momentum = check_real("momentum", group["momentum"], minimum=0.0, maximum=1.0)
        check_real("weight_decay", group["weight_decay"], minimum=0.0)
        check_flag("nesterov", group["nesterov"])
        if group["nesterov"] and momentum == 0.0:
            raise InvalidInputError("nesterov momentum requires momentum > 0")

    def _update(
        self, data: Array, grad: Array, state: dict[str, Any], lr: np.float32, group: Mapping[str, Any]
    ) -> tuple[Array, dict[str, Any]]:
        momentum = np.float32(group["momentum"])
        g: Array = grad + np.float32(group["weight_decay"]) * data
        if momentum == 0.0:
            return data - lr * g, {}
        # the buffer starts at zero, as the vendor preinitializes it: m * 0 + g (+0.0 for a -0.0 gradient)
        buffer = momentum * state.get("momentum_buffer", np.zeros_like(data)) + g
        direction = multiply_add(buffer, momentum, g) if group["nesterov"] else buffer
        return data - lr * direction, {"momentum_buffer": buffer}


class Adam(Optimizer):
    """Adam as the vendor's AdamBase computes it (OPTIM-013): ``weight_decay`` is L2 added to the
    gradient, and eps is added to ``sqrt(v)`` before the bias correction:
    ``w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``, eps 1e-6 by default.

    The moment coefficients ``1 - b`` are the exact differences rounded to float32 (not one minus
    the float32 beta), and each moment update ``b * m + (1 - b) * g`` rounds its multiply-add once,
    as the vendor's update does on the CPU (OPTIM-016). ``b^t`` is evaluated directly, not as the
    vendor's running product of betas, which rounds once per step.
    """

    decoupled_weight_decay = False

    def __init__(
        self,
        params: Any,
        lr: Any = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    def _check_hyperparameters(self, group: Mapping[str, Any]) -> None:
        betas = group["betas"]
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise InvalidInputError(f"betas must be a pair of numbers in [0, 1), got {betas!r}")
        check_real("betas[0]", betas[0], minimum=0.0, maximum=1.0, exclusive_maximum=True)
        check_real("betas[1]", betas[1], minimum=0.0, maximum=1.0, exclusive_maximum=True)
        check_real("eps", group["eps"], minimum=0.0)
        check_real("weight_decay", group["weight_decay"], minimum=0.0)

    def _update(
        self, data: Array, grad: Array, state: dict[str, Any], lr: np.float32, group: Mapping[str, Any]
    ) -> tuple[Array, dict[str, Any]]:
        beta1, beta2 = (np.float32(b) for b in group["betas"])
        rest1, rest2 = (np.float32(1.0 - float(b)) for b in group["betas"])  # 1 - b exactly, rounded once
        weight_decay = np.float32(group["weight_decay"])
        one = np.float32(1.0)
        # the L2 term only when there is one: 0 * an infinite or NaN weight would be NaN (OPTIM-018)
        g = grad if self.decoupled_weight_decay or weight_decay == 0 else multiply_add(data, weight_decay, grad)
        step = int(state.get("step", 0)) + 1
        exp_avg = multiply_add(g, rest1, beta1 * state.get("exp_avg", np.zeros_like(data)))
        exp_avg_sq = multiply_add(rest2 * g, g, beta2 * state.get("exp_avg_sq", np.zeros_like(data)))
        bias_correction1 = one - beta1 ** np.float32(step)
        bias_correction2 = one - beta2 ** np.float32(step)
        update = (
            exp_avg / (np.sqrt(exp_avg_sq) + np.float32(group["eps"])) * (np.sqrt(bias_correction2) / bias_correction1)
        )
        if self.decoupled_weight_decay:
            update = update + data * weight_decay
        new_data = data - update * lr
        return new_data, {"step": np.int64(step), "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq}


class AdamW(Adam):
    """Adam with decoupled weight decay (OPTIM-014): ``w -= lr * (adam_update + weight_decay * w)``.

    Adam's constructor, defaults included: no decay unless asked for, ``weight_decay`` 0 as the
    vendor's AdamW (OPTIM-015), not PyTorch's 0.01.
    """

    decoupled_weight_decay = True
