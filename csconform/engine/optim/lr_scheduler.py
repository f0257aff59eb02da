"""Learning rates as functions of the global step (the Cerebras ``optim.lr_scheduler`` family).

On the CS system the learning rate cannot be a Python scalar that a scheduler overwrites between
iterations: the compiled graph is static. Instead the whole schedule is a closed-form function of
the global step ``t`` that the optimizer evaluates as a tensor. Every class here is therefore a pure
callable: ``schedule(t)`` takes a non-negative Python ``int`` (or NumPy integer) or an integer
``ndarray`` of steps and returns float32 learning rates of the same shape (a 0-d ``np.float32`` for a
scalar step). Optimizer step ``k`` uses ``schedule(k)``.

Formulas are evaluated in float64 on whole arrays (no per-element Python loops) and rounded once to
float32; a zero factor stays zero where a power overflows float64 (no ``0 * inf`` NaN), and a power
beyond float64 is taken through logarithms (LR-025). Each class docstring states its formula; ``T``
is ``total_iters`` unless said otherwise.
Bad arguments raise :class:`csconform.errors.InvalidInputError` naming the argument.
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from csconform.arguments import check_flag, check_integer, check_real
from csconform.errors import InvalidInputError

__all__ = [
    "LRScheduler",
    "ConstantLR",
    "PolynomialLR",
    "LinearLR",
    "ExponentialLR",
    "InverseExponentialTimeDecayLR",
    "InverseSquareRootDecayLR",
    "CosineDecayLR",
    "CosineAnnealingLR",
    "StepLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "SequentialLR",
    "PiecewiseConstantLR",
    "CyclicLR",
    "OneCycleLR",
]

Steps = npt.NDArray[np.int64]
_INT64 = np.iinfo(np.int64)
Rates = npt.NDArray[np.float64]


# --- argument checks ----------------------------------------------------------------------------


def _milestones(name: str, values: object) -> tuple[int, ...]:
    """Strictly increasing positive integer steps."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray):
        raise InvalidInputError(f"{name} must be a sequence of integers, got {values!r}")
    steps = tuple(check_integer(f"{name}[{i}]", v, minimum=1) for i, v in enumerate(values))
    if any(later <= earlier for earlier, later in zip(steps, steps[1:], strict=False)):
        raise InvalidInputError(f"{name} must be strictly increasing, got {list(steps)}")
    return steps


def _as_steps(step: object) -> tuple[Steps, bool]:
    """Validate a global step (int or integer array); return it as int64 and whether it was scalar."""
    if isinstance(step, bool | np.bool_):
        raise InvalidInputError(f"the global step must be an integer, got {step!r}")
    if isinstance(step, numbers.Integral):
        if not _INT64.min <= int(step) <= _INT64.max:  # np.asarray would overflow untyped
            relation = "must be >= 0" if int(step) < 0 else "must fit in int64"
            raise InvalidInputError(f"the global step {relation}, got {int(step)}")
        steps = np.asarray(int(step), dtype=np.int64)
        scalar = True
    elif isinstance(step, np.ndarray):
        if step.dtype.kind not in "iu":
            raise InvalidInputError(f"global step arrays must have an integer dtype, got {step.dtype}")
        if step.dtype.kind == "u" and step.size and int(step.max()) > _INT64.max:
            raise InvalidInputError("global steps must fit in int64")
        steps = step.astype(np.int64)
        scalar = False
    else:
        raise InvalidInputError(f"the global step must be an int or an integer ndarray, got {type(step).__name__}")
    if steps.size and int(steps.min()) < 0:
        raise InvalidInputError(f"the global step must be >= 0, got minimum {int(steps.min())}")
    return steps, scalar


def _scaled_power(coefficient: float | Rates, base: float, exponent: npt.ArrayLike) -> Rates:
    """``coefficient * base ** exponent`` as the exact formula has it, where float64 would not.

    A zero coefficient gives 0 however large the power grows (float64 would give ``0 * inf``, NaN),
    and a power beyond float64's range is taken through logarithms, so the product is infinite
    only when its exact value is (LR-025).
    """
    coefficients = np.broadcast_to(np.asarray(coefficient, dtype=np.float64), np.shape(exponent))
    exponents = np.asarray(exponent, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        product = coefficients * np.power(base, exponents)
        through_logs = np.sign(coefficients) * np.exp(np.log(np.abs(coefficients)) + exponents * np.log(base))
    product = np.where(np.isfinite(product), product, through_logs)
    return np.where(coefficients == 0.0, 0.0, product)


# --- the family -----------------------------------------------------------------------------------


class LRScheduler(abc.ABC):
    """A learning rate schedule: a pure function of the global step, returning float32 rates."""

    def __call__(self, step: int | np.integer | npt.NDArray[np.integer]) -> np.float32 | npt.NDArray[np.float32]:
        steps, scalar = _as_steps(step)
        rates = np.asarray(self._rates(steps), dtype=np.float64)
        with np.errstate(over="ignore"):  # a rate beyond float32's range is +inf, as rounding says
            if scalar:
                return np.float32(rates)
            return rates.astype(np.float32)

    @abc.abstractmethod
    def _rates(self, steps: Steps) -> Rates:
        """The learning rates at ``steps`` (validated, int64, any shape) in float64."""


class ConstantLR(LRScheduler):
    """``lr(t) = learning_rate`` for every step."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = check_real("learning_rate", learning_rate, minimum=0.0)

    def _rates(self, steps: Steps) -> Rates:
        return np.full(steps.shape, self.learning_rate)


class PolynomialLR(LRScheduler):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate`` over ``T`` steps.

    ``lr(t) = end`` for ``t >= T``, else ``(init - end) * (1 - t / (T * a)) ** power + end`` with
    ``a = ceil((t + 1) / T)`` if ``cycle`` else 1 (public-facts#LR schedules, and the vendor's PolynomialScheduler).
    The clamp applies with ``cycle`` too, so ``a = 1`` at every step it acts on: ``cycle`` changes no
    value (LR-024).
    """

    def __init__(
        self,
        initial_learning_rate: float,
        end_learning_rate: float,
        total_iters: int,
        power: float = 1.0,
        cycle: bool = False,
    ) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.end_learning_rate = check_real("end_learning_rate", end_learning_rate, minimum=0.0)
        self.total_iters = check_integer("total_iters", total_iters, minimum=1)
        self.power = check_real("power", power, minimum=0.0)
        self.cycle = check_flag("cycle", cycle)

    def _rates(self, steps: Steps) -> Rates:
        t = steps.astype(np.float64)
        period: np.ndarray | float = float(self.total_iters)
        if self.cycle:
            period = period * np.ceil((t + 1.0) / period)
        fraction_left = np.maximum(1.0 - t / period, 0.0)
        decayed = (self.initial_learning_rate - self.end_learning_rate) * fraction_left**self.power
        rates = decayed + self.end_learning_rate
        return np.where(steps >= self.total_iters, self.end_learning_rate, rates)


class LinearLR(PolynomialLR):
    """Linear interpolation from ``initial_learning_rate`` to ``end_learning_rate``: PolynomialLR, power 1."""

    def __init__(
        self,
        initial_learning_rate: float,
        end_learning_rate: float,
        total_iters: int,
        cycle: bool = False,
    ) -> None:
        super().__init__(initial_learning_rate, end_learning_rate, total_iters, power=1.0, cycle=cycle)


class ExponentialLR(LRScheduler):
    """``lr(t) = init * decay_rate ** (t / T)``; with ``staircase`` the exponent is ``floor(t / T)``."""

    def __init__(
        self,
        initial_learning_rate: float,
        total_iters: int,
        decay_rate: float,
        staircase: bool = False,
    ) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.total_iters = check_integer("total_iters", total_iters, minimum=1)
        self.decay_rate = check_real("decay_rate", decay_rate, minimum=0.0, exclusive_minimum=True)
        self.staircase = check_flag("staircase", staircase)

    def _rates(self, steps: Steps) -> Rates:
        exponent = steps / self.total_iters
        if self.staircase:
            exponent = np.floor(exponent)
        return _scaled_power(self.initial_learning_rate, self.decay_rate, exponent)


class InverseExponentialTimeDecayLR(LRScheduler):
    """``lr(t) = init / (1 + decay_rate * (t ** step_exponent / T))``; ``staircase`` floors ``t**e / T``."""

    def __init__(
        self,
        initial_learning_rate: float,
        step_exponent: float,
        total_iters: int,
        decay_rate: float,
        staircase: bool = False,
    ) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.step_exponent = check_real("step_exponent", step_exponent, minimum=0.0)
        self.total_iters = check_integer("total_iters", total_iters, minimum=1)
        self.decay_rate = check_real("decay_rate", decay_rate, minimum=0.0)
        self.staircase = check_flag("staircase", staircase)

    def _rates(self, steps: Steps) -> Rates:
        with np.errstate(over="ignore"):
            elapsed = np.power(steps.astype(np.float64), self.step_exponent) / self.total_iters
        if self.staircase:
            elapsed = np.floor(elapsed)
        decay = np.zeros_like(elapsed) if self.decay_rate == 0.0 else self.decay_rate * elapsed  # no 0 * inf (LR-025)
        return self.initial_learning_rate / (1.0 + decay)


class InverseSquareRootDecayLR(LRScheduler):
    """``lr(t) = init * scale / sqrt(max(t, warmup_steps))``: constant during warm-up, then 1/sqrt(t)."""

    def __init__(
        self,
        initial_learning_rate: float = 1.0,
        scale: float = 1.0,
        warmup_steps: int = 1,
    ) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.scale = check_real("scale", scale, minimum=0.0)
        self.warmup_steps = check_integer("warmup_steps", warmup_steps, minimum=1)

    def _rates(self, steps: Steps) -> Rates:
        return self.initial_learning_rate * self.scale / np.sqrt(np.maximum(steps, self.warmup_steps))


class CosineDecayLR(LRScheduler):
    """``lr(t) = end + (init - end) * 0.5 * (1 + cos(pi * min(t, T) / T))``: half a cosine, then flat."""

    def __init__(self, initial_learning_rate: float, end_learning_rate: float, total_iters: int) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.end_learning_rate = check_real("end_learning_rate", end_learning_rate, minimum=0.0)
        self.total_iters = check_integer("total_iters", total_iters, minimum=1)

    def _rates(self, steps: Steps) -> Rates:
        progress = np.minimum(steps, self.total_iters) / self.total_iters
        span = self.initial_learning_rate - self.end_learning_rate
        return self.end_learning_rate + span * 0.5 * (1.0 + np.cos(np.pi * progress))


class CosineAnnealingLR(LRScheduler):
    """PyTorch's closed form: ``lr(t) = eta_min + (init - eta_min) * (1 + cos(pi * t / T_max)) / 2``.

    As in PyTorch the cosine is not clamped: past ``T_max`` the rate climbs back towards ``init``
    (period ``2 * T_max``).
    """

    def __init__(self, initial_learning_rate: float, T_max: int, eta_min: float = 0.0) -> None:  # noqa: N803
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.T_max = check_integer("T_max", T_max, minimum=1)
        self.eta_min = check_real("eta_min", eta_min, minimum=0.0)

    def _rates(self, steps: Steps) -> Rates:
        span = self.initial_learning_rate - self.eta_min
        # the cosine's period is 2 * T_max steps: reduce the integer step first, so that a step beyond
        # float64's integers (2**53) still gives the exact phase
        phase = np.mod(steps, 2 * self.T_max) if 2 * self.T_max <= _INT64.max else steps
        return self.eta_min + span * (1.0 + np.cos(np.pi * phase / self.T_max)) / 2.0


class StepLR(LRScheduler):
    """``lr(t) = init * gamma ** floor(t / step_size)``."""

    def __init__(self, initial_learning_rate: float, step_size: int, gamma: float) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.step_size = check_integer("step_size", step_size, minimum=1)
        self.gamma = check_real("gamma", gamma, minimum=0.0)

    def _rates(self, steps: Steps) -> Rates:
        return _scaled_power(self.initial_learning_rate, self.gamma, steps // self.step_size)


class MultiStepLR(LRScheduler):
    """``lr(t) = init * gamma ** (number of milestones <= t)``; milestones strictly increasing."""

    def __init__(self, initial_learning_rate: float, gamma: float, milestones: Sequence[int]) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.gamma = check_real("gamma", gamma, minimum=0.0)
        self.milestones = _milestones("milestones", milestones)

    def _rates(self, steps: Steps) -> Rates:
        passed = np.searchsorted(np.asarray(self.milestones, dtype=np.int64), steps, side="right")
        return _scaled_power(self.initial_learning_rate, self.gamma, passed)


class MultiplicativeLR(LRScheduler):
    """A constant factor per step: ``lr(t) = init * multiplier ** t``.

    PyTorch's MultiplicativeLR takes an arbitrary per-step function; a closed form needs a constant
    factor, which is the Cerebras form.
    """

    def __init__(self, initial_learning_rate: float, multiplier: float) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.multiplier = check_real("multiplier", multiplier, minimum=0.0, exclusive_minimum=True)

    def _rates(self, steps: Steps) -> Rates:
        return _scaled_power(self.initial_learning_rate, self.multiplier, steps)


class SequentialLR(LRScheduler):
    """Schedules run one after another: ``schedulers[i + 1]`` takes over at ``milestones[i]``.

    Each scheduler sees its local step, ``t - milestones[i]`` (scheduler 0 sees ``t``), so a warm-up
    followed by a decay is written with the decay starting from its own step 0.
    """

    def __init__(self, schedulers: Sequence[LRScheduler], milestones: Sequence[int]) -> None:
        if isinstance(schedulers, LRScheduler) or not isinstance(schedulers, Sequence) or not schedulers:
            raise InvalidInputError("schedulers must be a non-empty sequence of LR schedulers")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler):
                raise InvalidInputError(f"schedulers[{i}] is not an LR scheduler: {scheduler!r}")
        self.schedulers = tuple(schedulers)
        self.milestones = _milestones("milestones", milestones)
        if len(self.milestones) != len(self.schedulers) - 1:
            raise InvalidInputError(
                f"SequentialLR needs len(milestones) == len(schedulers) - 1, got {len(self.milestones)} "
                f"milestones for {len(self.schedulers)} schedulers"
            )

    def _rates(self, steps: Steps) -> Rates:
        phase = np.searchsorted(np.asarray(self.milestones, dtype=np.int64), steps, side="right")
        starts = np.asarray((0, *self.milestones), dtype=np.int64)
        rates = np.empty(steps.shape, dtype=np.float64)
        for index, scheduler in enumerate(self.schedulers):
            in_phase = phase == index
            if np.any(in_phase):
                rates[in_phase] = scheduler._rates(steps[in_phase] - starts[index])
        return rates


class PiecewiseConstantLR(LRScheduler):
    """``lr(t) = learning_rates[i]`` for ``milestones[i-1] <= t < milestones[i]``.

    ``len(learning_rates) == len(milestones) + 1``; the last rate holds from the last milestone on.
    """

    def __init__(self, learning_rates: Sequence[float], milestones: Sequence[int]) -> None:
        if isinstance(learning_rates, (str, bytes)) or not isinstance(learning_rates, Sequence | np.ndarray):
            raise InvalidInputError(f"learning_rates must be a sequence of numbers, got {learning_rates!r}")
        self.learning_rates = tuple(
            check_real(f"learning_rates[{i}]", rate, minimum=0.0) for i, rate in enumerate(learning_rates)
        )
        self.milestones = _milestones("milestones", milestones)
        if len(self.learning_rates) != len(self.milestones) + 1:
            raise InvalidInputError(
                f"PiecewiseConstantLR needs len(learning_rates) == len(milestones) + 1, got "
                f"{len(self.learning_rates)} rates and {len(self.milestones)} milestones"
            )

    def _rates(self, steps: Steps) -> Rates:
        segment = np.searchsorted(np.asarray(self.milestones, dtype=np.int64), steps, side="right")
        return np.asarray(self.learning_rates, dtype=np.float64)[segment]


class CyclicLR(LRScheduler):
    """Triangular cycles between ``base_lr`` and ``max_lr`` (PyTorch's CyclicLR, closed form).

    A cycle is ``step_size_up`` steps rising then ``step_size_down`` (default: up) steps falling.
    With ``cycle = floor(1 + t / L)``, ``x = 1 + t / L - cycle`` (``L`` the cycle length) and
    ``r = step_size_up / L``, the height factor is ``x / r`` while rising and ``(x - 1) / (r - 1)``
    while falling, and ``lr = base_lr + (max_lr - base_lr) * factor * amplitude`` where the
    amplitude is 1 (``"triangular"``), ``1 / 2 ** (cycle - 1)`` (``"triangular2"``) or
    ``gamma ** t`` (``"exp_range"``).
    """

    MODES = ("triangular", "triangular2", "exp_range")

    def __init__(
        self,
        base_lr: float,
        max_lr: float,
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
    ) -> None:
        self.base_lr = check_real("base_lr", base_lr, minimum=0.0)
        self.max_lr = check_real("max_lr", max_lr, minimum=0.0)
        self.step_size_up = check_integer("step_size_up", step_size_up, minimum=1)
        self.step_size_down = (
            self.step_size_up if step_size_down is None else check_integer("step_size_down", step_size_down, minimum=1)
        )
        if not isinstance(mode, str) or mode not in self.MODES:
            raise InvalidInputError(f"unknown CyclicLR mode {mode!r}; known modes: {', '.join(self.MODES)}")
        self.mode = mode
        self.gamma = check_real("gamma", gamma, minimum=0.0, exclusive_minimum=True)

    def _rates(self, steps: Steps) -> Rates:
        cycle_steps = self.step_size_up + self.step_size_down
        rise_ratio = self.step_size_up / cycle_steps
        # integer division first: steps beyond float64's integers (2**53) keep their exact phase; a cycle
        # longer than int64 holds every step in its first pass
        if cycle_steps <= _INT64.max:
            completed, within = np.divmod(steps, cycle_steps)
        else:
            completed, within = np.zeros_like(steps), steps
        cycle = completed.astype(np.float64) + 1.0
        x = within / cycle_steps
        factor = np.where(x <= rise_ratio, x / rise_ratio, (x - 1.0) / (rise_ratio - 1.0))
        height = (self.max_lr - self.base_lr) * factor
        if self.mode == "triangular":
            return self.base_lr + height
        if self.mode == "triangular2":
            return self.base_lr + height * np.power(0.5, cycle - 1.0)
        return self.base_lr + _scaled_power(height, self.gamma, steps)


class OneCycleLR(LRScheduler):
    """The one-cycle policy (PyTorch's OneCycleLR with the start rate given directly).

    ``min_lr = initial_learning_rate / final_div_factor``. Two phases: ``init -> max_lr`` over steps
    ``[0, e1]`` with ``e1 = pct_start * total_steps - 1``, then ``max_lr -> min_lr`` over
    ``[e1, total_steps - 1]``. With ``three_phase``: ``init -> max`` over ``[0, e1]``,
    ``max -> init`` over ``[e1, e2]`` with ``e2 = 2 * pct_start * total_steps - 2``, then
    ``init -> min`` over ``[e2, total_steps - 1]``. Within a phase ``p = (t - start) / (end - start)``
    and the rate is ``end + (start - end) * (1 + cos(pi * p)) / 2`` (``"cos"``) or
    ``start + (end - start) * p`` (``"linear"``). From ``total_steps - 1`` on the rate stays ``min_lr``.
    """

    ANNEAL_STRATEGIES = ("cos", "linear")

    def __init__(
        self,
        initial_learning_rate: float,
        max_lr: float,
        total_steps: int = 1000,
        pct_start: float = 0.3,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        anneal_strategy: str = "cos",
    ) -> None:
        self.initial_learning_rate = check_real("initial_learning_rate", initial_learning_rate, minimum=0.0)
        self.max_lr = check_real("max_lr", max_lr, minimum=0.0)
        self.total_steps = check_integer("total_steps", total_steps, minimum=2)
        self.pct_start = check_real("pct_start", pct_start, minimum=0.0, exclusive_minimum=True)
        if self.pct_start >= 1.0:
            raise InvalidInputError(f"pct_start must be < 1, got {self.pct_start}")
        self.final_div_factor = check_real("final_div_factor", final_div_factor, minimum=0.0, exclusive_minimum=True)
        self.three_phase = check_flag("three_phase", three_phase)
        if not isinstance(anneal_strategy, str) or anneal_strategy not in self.ANNEAL_STRATEGIES:
            raise InvalidInputError(
                f"unknown anneal_strategy {anneal_strategy!r}; known: {', '.join(self.ANNEAL_STRATEGIES)}"
            )
        self.anneal_strategy = anneal_strategy
        self.min_lr = self.initial_learning_rate / self.final_div_factor
        warmup_end = self.pct_start * self.total_steps - 1.0
        last = float(self.total_steps - 1)
        ends: tuple[float, ...]
        levels: tuple[float, ...]
        if self.three_phase:
            ends = (warmup_end, 2.0 * self.pct_start * self.total_steps - 2.0, last)
            levels = (self.initial_learning_rate, self.max_lr, self.initial_learning_rate, self.min_lr)
        else:
            ends = (warmup_end, last)
            levels = (self.initial_learning_rate, self.max_lr, self.min_lr)
        bounds = (0.0, *ends)
        if any(later <= earlier for earlier, later in zip(bounds, bounds[1:], strict=False)):
            raise InvalidInputError(
                f"OneCycleLR phases would be empty: pct_start={self.pct_start} and "
                f"total_steps={self.total_steps} give phase ends {list(ends)}"
            )
        self._bounds = bounds
        self._levels = levels

    def _rates(self, steps: Steps) -> Rates:
        t = steps.astype(np.float64)
        phase_ends = np.asarray(self._bounds[1:])
        # The phase holding t is the first whose end is >= t; later steps belong to the last phase.
        phase = np.minimum(np.searchsorted(phase_ends, t, side="left"), len(phase_ends) - 1)
        starts = np.asarray(self._bounds[:-1])[phase]
        ends = phase_ends[phase]
        start_lr = np.asarray(self._levels[:-1])[phase]
        end_lr = np.asarray(self._levels[1:])[phase]
        progress = np.clip((t - starts) / (ends - starts), 0.0, 1.0)
        if self.anneal_strategy == "cos":
            return end_lr + (start_lr - end_lr) * (1.0 + np.cos(np.pi * progress)) / 2.0
        return start_lr + (end_lr - start_lr) * progress
