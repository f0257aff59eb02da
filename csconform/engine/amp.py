"""Automatic mixed precision: the 16-bit format choice and the GradScaler (loss scaling).

Training in 16-bit formats loses small gradients to underflow. Loss scaling multiplies the loss by a
large factor before the backward pass and divides the gradients by it again before the weight
update. With dynamic loss scaling (DLS) the factor adapts: it is halved whenever the gradients
overflow (and that step is skipped), and doubled after a run of clean steps. DLS + GCC adds global
gradient clipping by the gradient norm.

Semantics follow the public Cerebras ``amp/grad_scaler.py`` (public-facts#GradScaler):

* Finiteness is decided on the global L2 norm of all unscaled gradients of an optimizer, computed
  in float32: an iteration is finite iff that norm is below infinity (a NaN norm is not finite).
  Static loss scaling checks nothing and never skips a step.
* A skipped step does not call ``optimizer.step`` at all, so parameters and optimizer state stay
  bit-identical and the optimizer's global step (the LR schedule's step) does not advance.
* The dynamic scale is a float32 value, as the vendor keeps it (a float32 tensor): it starts at
  ``min(init_scale, max_loss_scale)`` rounded to float32, ``init_scale`` defaulting to the half
  dtype's default maximum whatever ``max_loss_scale`` is given, and is clamped into the float32
  roundings of ``[min_loss_scale, max_loss_scale]``. A static scale is kept as given.
* ``update()`` applies the DLS rule once per iteration (factor 2 both ways, strict comparisons,
  clamped to ``[min_loss_scale, max_loss_scale]``) and never raises at the minimum: the scale stays
  clamped there. Reporting a run whose gradients stay non-finite at the minimum scale is the
  training loop's business (the runner's ``NonRecoverableNaNError``; public-facts#GradScaler).

The optimizer is duck-typed: ``param_groups`` (dicts with ``"params"``), parameters with a float32
``grad`` array (or ``None``) and a ``step(*args, **kwargs)`` method. Gradients found on the
parameters are treated as scaled gradients, whether they came from ``scale(loss).backward()`` or
were assigned directly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from csconform.arguments import check_integer, check_real
from csconform.engine import context
from csconform.engine.precision import set_half_dtype
from csconform.errors import GradScalerConfigError, GradScalerUsageError, InvalidInputError

__all__ = ["GradScaler", "optimizer_step", "set_half_dtype", "default_max_loss_scale"]

SMALLEST_MIN_LOSS_SCALE = 2.0**-14
DEFAULT_STEPS_PER_INCREASE = 2000
GCC_EPSILON = 1e-6
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_ROUNDS_TO_ZERO = 2.0**-150
"""The largest number float32 rounds to zero (half its smallest subnormal, a tie rounded to even)."""
_DYNAMIC_KEYS = ("loss_scale", "steps_since_rescale", "overflows_since_rescale", "num_skipped_steps")
_STATIC_KEYS = ("loss_scale",)


def default_max_loss_scale() -> float:
    """2^31 when the half dtype is cbfloat16 (its wider exponent range), else 2^15."""
    return 2.0**31 if context.half_dtype_name() == "cbfloat16" else 2.0**15


def _positive_scale(name: str, value: object) -> float:
    """A loss-scale-like value: a real number, finite and > 0 in float32 (not rounded to 0 there)."""
    return check_real(
        name,
        value,
        minimum=_FLOAT32_ROUNDS_TO_ZERO,
        maximum=_FLOAT32_MAX,
        exclusive_minimum=True,
        error=GradScalerConfigError,
    )


def _float32(value: float) -> float:
    """``value`` rounded to float32, as a Python float: the dynamic scale's precision."""
    return float(np.float32(value))


def _count(name: str, value: object) -> int:
    return check_integer(name, value, minimum=0, error=GradScalerConfigError)


def _parameters(optimizers: object) -> Iterator[Any]:
    """Every parameter of one optimizer or of an iterable of optimizers."""
    if hasattr(optimizers, "param_groups"):
        group_owners = [optimizers]
    elif isinstance(optimizers, list | tuple) and optimizers and all(hasattr(o, "param_groups") for o in optimizers):
        group_owners = list(optimizers)
    else:
        raise InvalidInputError(
            f"expected an optimizer (with param_groups) or a list of them, got {type(optimizers).__name__}"
        )
    for optimizer in group_owners:
        for group in optimizer.param_groups:
            yield from group["params"]


def _one_optimizer(optimizer: object) -> Any:
    """``optimizer`` if it is one optimizer (param groups and a step method)."""
    if not (hasattr(optimizer, "param_groups") and callable(getattr(optimizer, "step", None))):
        raise InvalidInputError(f"expected an optimizer (with param_groups and step), got {type(optimizer).__name__}")
    return optimizer


def _gradients(optimizers: object) -> list[Any]:
    """The parameters that currently hold a gradient."""
    return [param for param in _parameters(optimizers) if getattr(param, "grad", None) is not None]


def global_grad_norm(params: Iterable[Any]) -> float:
    """The L2 norm of all gradients together, accumulated in float32 (inf if the square-sum overflows)."""
    square_sum = np.float32(0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        for param in params:
            grad = np.asarray(param.grad, dtype=np.float32)
            square_sum = np.float32(square_sum + np.sum(np.square(grad), dtype=np.float32))
        return float(np.sqrt(square_sum))


def _scale_gradients(params: Iterable[Any], factor: float) -> None:
    """Multiply every gradient by ``factor`` (rounded to float32), keeping float32 storage."""
    factor32 = np.float32(factor)
    with np.errstate(over="ignore", invalid="ignore"):
        for param in params:
            param.grad = np.asarray(param.grad, dtype=np.float32) * factor32


class GradScaler:
    """Static or dynamic loss scaling for one training loop (see the module docstring).

    ``loss_scale``: ``"dynamic"`` turns on DLS; a falsy value means a static scale of 1.0; any other
    number is a static scale. The remaining arguments configure DLS and are validated always.
    """

    def __init__(
        self,
        loss_scale: str | float | None = None,
        init_scale: float | None = None,
        steps_per_increase: int | None = None,
        min_loss_scale: float | None = None,
        max_loss_scale: float | None = None,
        overflow_tolerance: float = 0.0,
        max_gradient_norm: float | None = None,
    ) -> None:
        if not isinstance(loss_scale, str | numbers.Real | None):
            raise GradScalerConfigError(f"loss_scale must be 'dynamic' or a number, got {type(loss_scale).__name__}")
        if isinstance(loss_scale, str) and loss_scale == "dynamic":
            self.dynamic = True
        elif not loss_scale:
            self.dynamic = False
            loss_scale = 1.0
        elif isinstance(loss_scale, str):
            raise GradScalerConfigError(f"loss_scale must be 'dynamic' or a number, got {loss_scale!r}")
        else:
            self.dynamic = False

        self.min_loss_scale = (
            SMALLEST_MIN_LOSS_SCALE if min_loss_scale is None else _positive_scale("min_loss_scale", min_loss_scale)
        )
        if self.min_loss_scale < SMALLEST_MIN_LOSS_SCALE:
            raise GradScalerConfigError("min_loss_scale too small")
        self.max_loss_scale = (
            default_max_loss_scale() if max_loss_scale is None else _positive_scale("max_loss_scale", max_loss_scale)
        )
        if self.max_loss_scale < self.min_loss_scale:
            raise GradScalerConfigError(
                f"max_loss_scale ({self.max_loss_scale}) must be >= min_loss_scale ({self.min_loss_scale})"
            )
        # the default start is the half dtype's default maximum, also when a smaller maximum is given
        self.init_scale = default_max_loss_scale() if init_scale is None else _positive_scale("init_scale", init_scale)
        self.steps_per_increase = (
            DEFAULT_STEPS_PER_INCREASE
            if steps_per_increase is None
            else _count("steps_per_increase", steps_per_increase)
        )
        self.overflow_tolerance: float = check_real(
            "overflow_tolerance", overflow_tolerance, minimum=0.0, finite=False, error=GradScalerConfigError
        )
        self.max_gradient_norm: float | None = (
            None if max_gradient_norm is None else _positive_scale("max_gradient_norm", max_gradient_norm)
        )

        self._loss_scale: float = (
            _float32(min(self.init_scale, self.max_loss_scale))
            if self.dynamic
            else _positive_scale("loss_scale", loss_scale)
        )
        self._steps_since_rescale: int = 0
        self._overflows_since_rescale: int = 0
        self._num_skipped_steps: int = 0
        # Per-iteration protocol state, keyed by id(optimizer); cleared by update().
        self._finite: dict[int, bool] = {}
        self._stepped: set[int] = set()

    # --- scaling ----------------------------------------------------------------------------------

    def get_scale(self) -> float:
        """The current loss scale."""
        return self._loss_scale

    def is_at_minimum(self) -> bool:
        """Whether a dynamic scale is at ``min_loss_scale``, where halving it can no longer help."""
        return self.dynamic and self._loss_scale <= _float32(self.min_loss_scale)

    def scale(self, loss: Any) -> Any:
        """The loss multiplied by the current loss scale (the scale is rounded to float32).

        Once an optimizer was unscaled or stepped in this iteration, scaling waits for ``update()``
        (GRADSCALER-045), except with a static scale of 1, which scales nothing.
        """
        if (self._finite or self._stepped) and (self.dynamic or self._loss_scale != 1.0):
            raise GradScalerUsageError(
                "Optimizer parameter gradients already scaled: scale() after unscale_() or step() in this "
                "iteration; call update() first"
            )
        if isinstance(loss, np.ndarray | np.generic | float | int) and not isinstance(loss, bool):
            if np.asarray(loss).dtype.kind not in "biuf":
                raise InvalidInputError(f"loss must be a number, an array of numbers or a Loss, got {loss!r}")
            return np.float32(loss) * np.float32(self._loss_scale)
        if not callable(getattr(loss, "backward", None)):
            raise InvalidInputError(f"loss must be a number, an array of numbers or a Loss, got {type(loss).__name__}")
        return loss * np.float32(self._loss_scale)

    def unscale_(self, optimizer: Any) -> None:
        """Divide the optimizer's gradients by the loss scale in place, then check (and clip) them.

        A second call in the same iteration does nothing.

        In dynamic mode this records whether the global gradient norm is finite and, with
        ``max_gradient_norm``, clips the gradients (DLS + GCC). Static mode only divides.
        """
        key = id(_one_optimizer(optimizer))
        if key in self._stepped:
            raise GradScalerUsageError("unscale_() is being called after step() in this iteration")
        if key in self._finite:
            return  # already unscaled in this iteration: the gradients are divided once (the vendor's rule)
        params = _gradients(optimizer)
        _scale_gradients(params, 1.0 / self._loss_scale)
        self._finite[key] = self.clip_gradients_and_return_isfinite(optimizer) if self.dynamic else True

    def clip_gradients_and_return_isfinite(self, optimizers: Any) -> bool:
        """Whether the global L2 norm of the (unscaled) gradients of ``optimizers`` is finite.

        With DLS and ``max_gradient_norm`` (GCC), finite gradients are also multiplied by
        ``min(1, max_gradient_norm / (norm + 1e-6))``.
        """
        params = _gradients(optimizers)
        norm = global_grad_norm(params)
        finite = norm < math.inf  # False for inf and for NaN
        if finite and self.dynamic and self.max_gradient_norm is not None:
            factor = min(1.0, self.max_gradient_norm / (norm + GCC_EPSILON))
            if factor < 1.0:
                _scale_gradients(params, factor)
        return finite

    # --- stepping ---------------------------------------------------------------------------------

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` was already called this iteration), then step if finite.

        Returns what ``optimizer.step(*args, **kwargs)`` returns, or ``None`` for a skipped step.
        """
        if id(_one_optimizer(optimizer)) in self._stepped:
            raise GradScalerUsageError("step() has already been called for this optimizer since the last update()")
        if id(optimizer) not in self._finite:
            self.unscale_(optimizer)
        return self.step_if_finite(optimizer, *args, **kwargs)

    def step_if_finite(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Call ``optimizer.step(*args, **kwargs)`` only if this iteration's gradients were finite.

        ``unscale_(optimizer)`` must have run first (``step`` does it for you). A skipped step
        leaves the optimizer untouched and returns ``None``.
        """
        key = id(_one_optimizer(optimizer))
        if key in self._stepped:
            raise GradScalerUsageError("step() has already been called for this optimizer since the last update()")
        if key not in self._finite:
            raise GradScalerUsageError("step_if_finite() needs unscale_(optimizer) first in this iteration")
        self._stepped.add(key)
        if not self._finite[key]:
            self._num_skipped_steps += 1
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Adapt the loss scale once per iteration, after every optimizer was stepped.

        Dynamic mode applies the DLS rule (module docstring); static mode changes nothing. Any
        ``new_scale`` is refused, 0 included: the scale is the GradScaler's alone.
        """
        if new_scale is not None:
            raise GradScalerUsageError(
                "update(new_scale) is not supported: the loss scale is managed by the GradScaler"
            )
        if not self.dynamic:
            self._end_iteration()
            return
        if not self._finite:
            raise GradScalerUsageError(
                "update() called before any gradients were checked in this iteration: call step(optimizer) "
                "(or unscale_(optimizer)) first"
            )
        self._apply_dls_rule(all(self._finite.values()))
        self._end_iteration()

    def _apply_dls_rule(self, finite: bool) -> None:
        self._steps_since_rescale += 1
        self._overflows_since_rescale += 0 if finite else 1
        if self._overflows_since_rescale / self._steps_since_rescale > self.overflow_tolerance:
            self._loss_scale /= 2.0
            self._steps_since_rescale = self._overflows_since_rescale = 0
        if self._steps_since_rescale > self.steps_per_increase:
            self._loss_scale *= 2.0
            self._steps_since_rescale = self._overflows_since_rescale = 0
        self._loss_scale = max(min(self._loss_scale, _float32(self.max_loss_scale)), _float32(self.min_loss_scale))

    def _end_iteration(self) -> None:
        self._finite.clear()
        self._stepped.clear()

    # --- checkpointing ------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, float | int]:
        """The scaler's state: the scale, plus the DLS counters in dynamic mode."""
        if not self.dynamic:
            return {"loss_scale": self._loss_scale}
        return {
            "loss_scale": self._loss_scale,
            "steps_since_rescale": self._steps_since_rescale,
            "overflows_since_rescale": self._overflows_since_rescale,
            "num_skipped_steps": self._num_skipped_steps,
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()``; keys must match this scaler's mode.

        ``num_skipped_steps`` may be missing (older releases did not save it; it then restarts at 0).
        """
        if not isinstance(state_dict, Mapping):
            raise GradScalerConfigError(f"a GradScaler state_dict must be a mapping, got {type(state_dict).__name__}")
        expected = _DYNAMIC_KEYS if self.dynamic else _STATIC_KEYS
        optional = {"num_skipped_steps"} if self.dynamic else set()
        missing = [key for key in expected if key not in state_dict and key not in optional]
        unexpected = [key for key in state_dict if key not in expected]
        if missing or unexpected:
            mode = "dynamic" if self.dynamic else "static"
            raise GradScalerConfigError(
                f"state_dict does not match a {mode} GradScaler: missing keys {missing}, unexpected keys "
                f"{unexpected} (expected {list(expected)})"
            )
        loss_scale = _positive_scale("loss_scale", state_dict["loss_scale"])
        if self.dynamic:
            steps = _count("steps_since_rescale", state_dict["steps_since_rescale"])
            overflows = _count("overflows_since_rescale", state_dict["overflows_since_rescale"])
            skipped = _count("num_skipped_steps", state_dict.get("num_skipped_steps", 0))
            if overflows > steps:
                raise GradScalerConfigError(
                    f"overflows_since_rescale ({overflows}) cannot exceed steps_since_rescale ({steps})"
                )
            self._steps_since_rescale = steps
            self._overflows_since_rescale = overflows
            self._num_skipped_steps = skipped
        self._loss_scale = _float32(loss_scale) if self.dynamic else loss_scale


def optimizer_step(
    loss: Any,
    optimizer: Any,
    grad_scaler: GradScaler,
    max_gradient_norm: float | None = None,
    max_gradient_value: float | None = None,
) -> Any:
    """One whole update: scale the loss, backward, unscale, clip, step, update the scaler.

    Gradients are cleared first (``optimizer.zero_grad()``), so each call sees only this loss.
    Clipping is by global norm (``g * min(1, max_norm / (norm + 1e-6))`` on finite norms) or by value
    (``clip(g, -v, v)``), not both. Returns what ``grad_scaler.step`` returns.
    """
    if not isinstance(grad_scaler, GradScaler):
        raise InvalidInputError(f"grad_scaler must be a GradScaler, got {type(grad_scaler).__name__}")
    if not (hasattr(optimizer, "param_groups") and callable(getattr(optimizer, "zero_grad", None))):
        raise InvalidInputError(f"optimizer must be an optimizer, got {type(optimizer).__name__}")
    if not callable(getattr(loss, "backward", None)):
        raise InvalidInputError(
            f"loss must be a Loss (it is scaled, then backward() is run), got {type(loss).__name__}"
        )
    if max_gradient_norm is not None and max_gradient_value is not None:
        raise GradScalerConfigError("give max_gradient_norm or max_gradient_value, not both")
    norm_limit = None if max_gradient_norm is None else _positive_scale("max_gradient_norm", max_gradient_norm)
    value_limit = None if max_gradient_value is None else _positive_scale("max_gradient_value", max_gradient_value)
    optimizer.zero_grad()
    grad_scaler.scale(loss).backward()
    grad_scaler.unscale_(optimizer)
    params = _gradients(optimizer)
    if norm_limit is not None:
        norm = global_grad_norm(params)
        if norm < math.inf and norm_limit / (norm + GCC_EPSILON) < 1.0:
            _scale_gradients(params, norm_limit / (norm + GCC_EPSILON))
    elif value_limit is not None:
        for param in params:
            param.grad = np.clip(param.grad, np.float32(-value_limit), np.float32(value_limit))
    result = grad_scaler.step(optimizer)
    grad_scaler.update()
    return result
