"""Learning-rate schedules: every class, edge parameters, very large steps, schedules in sequence.

A program builds one schedule (now and then a ``SequentialLR`` of others, itself possibly nested)
and evaluates it at a few global steps: small ones, the steps around its own landmarks (``T - 1``,
``T``, ``T + 1``), large ones (150, where a float32 power of 2 overflows, 10**6) and very large ones
(2**31, 2**53 + 1, 2**62), a negative one, NumPy integers and integer arrays. Arguments are mostly
typical, sometimes at an edge: 0, negative, NaN, infinite, a float where an integer is due,
milestones out of order, or a degenerate schedule whose rates are 0 and factors above 1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from csconform.testing.differential.areas import Area, Context
from csconform.testing.differential.areas.values import branch, sometimes
from csconform.testing.differential.program import Expr, call

RATES = [0.1, 0.0, 1.0, 0.5, 1e-3, 2.5, 1e-30, -0.1, math.nan, math.inf]
ENDS = [0.0, 0.01, 0.1, 1.0, -0.01]
PERIODS = [10, 1, 3, 100, 1000, 0, -5, 2.5]
FACTORS = [0.5, 2.0, 0.1, 0.9, 1.0, 10.0, 0.0, -0.5, math.nan]
EXPONENTS = [1.0, 2.0, 0.5, 0.0, 3.0, -1.0]
BOOLEANS = [False, True]


def _value(options: list[Any]) -> st.SearchStrategy[Any]:
    """Typical options first (where shrinking goes), edges further down the list."""
    return st.sampled_from(options)


def _milestones(draw: st.DrawFn, count: int) -> list[int]:
    steps = sorted(draw(st.lists(st.integers(1, 50), min_size=count, max_size=count, unique=True)))
    if count and draw(sometimes(10)):
        steps = steps[::-1] if count > 1 else [0]  # out of order, or not positive
    return steps


SCHEDULES: dict[str, dict[str, list[Any]]] = {
    "ConstantLR": {"learning_rate": RATES},
    "PolynomialLR": {
        "initial_learning_rate": RATES,
        "end_learning_rate": ENDS,
        "total_iters": PERIODS,
        "power": EXPONENTS,
        "cycle": BOOLEANS,
    },
    "LinearLR": {"initial_learning_rate": RATES, "end_learning_rate": ENDS, "total_iters": PERIODS, "cycle": BOOLEANS},
    "ExponentialLR": {
        "initial_learning_rate": RATES,
        "total_iters": PERIODS,
        "decay_rate": FACTORS,
        "staircase": BOOLEANS,
    },
    "InverseExponentialTimeDecayLR": {
        "initial_learning_rate": RATES,
        "step_exponent": EXPONENTS,
        "total_iters": PERIODS,
        "decay_rate": FACTORS,
        "staircase": BOOLEANS,
    },
    "InverseSquareRootDecayLR": {
        "initial_learning_rate": RATES,
        "scale": [1.0, 2.0, 0.0, -1.0],
        "warmup_steps": PERIODS,
    },
    "CosineDecayLR": {"initial_learning_rate": RATES, "end_learning_rate": ENDS, "total_iters": PERIODS},
    "CosineAnnealingLR": {"initial_learning_rate": RATES, "T_max": PERIODS, "eta_min": ENDS},
    "StepLR": {"initial_learning_rate": RATES, "step_size": PERIODS, "gamma": FACTORS},
    "MultiplicativeLR": {"initial_learning_rate": RATES, "multiplier": FACTORS},
    "CyclicLR": {
        "base_lr": ENDS,
        "max_lr": RATES,
        "step_size_up": PERIODS,
        "step_size_down": [None, *PERIODS],
        "mode": ["triangular", "triangular2", "exp_range", "sawtooth"],
        "gamma": FACTORS,
    },
    "OneCycleLR": {
        "initial_learning_rate": RATES,
        "max_lr": RATES,
        "total_steps": [100, 10, 1000, 2, 1, 0],
        "pct_start": [0.3, 0.25, 0.5, 0.0, 1.0, 1.5],
        "final_div_factor": [1e4, 10.0, 1.0, 0.0],
        "three_phase": BOOLEANS,
        "anneal_strategy": ["cos", "linear", "step"],
    },
}
"""Each closed-form schedule and its keyword arguments (the interface's names)."""

REQUIRED = {
    "PolynomialLR": ("initial_learning_rate", "end_learning_rate", "total_iters"),
    "LinearLR": ("initial_learning_rate", "end_learning_rate", "total_iters"),
    "ExponentialLR": ("initial_learning_rate", "total_iters", "decay_rate"),
    "InverseExponentialTimeDecayLR": ("initial_learning_rate", "step_exponent", "total_iters", "decay_rate"),
    "CosineDecayLR": ("initial_learning_rate", "end_learning_rate", "total_iters"),
    "CosineAnnealingLR": ("initial_learning_rate", "T_max"),
    "StepLR": ("initial_learning_rate", "step_size", "gamma"),
    "MultiplicativeLR": ("initial_learning_rate", "multiplier"),
    "CyclicLR": ("base_lr", "max_lr"),
    "OneCycleLR": ("initial_learning_rate", "max_lr"),
    "ConstantLR": ("learning_rate",),
}


RATE_KEYS = frozenset({"learning_rate", "initial_learning_rate", "end_learning_rate", "base_lr", "max_lr", "eta_min"})
FACTOR_KEYS = frozenset({"decay_rate", "gamma", "multiplier"})


@st.composite
def simple_schedule(draw: st.DrawFn, edges: bool = True) -> tuple[str, dict[str, Any]]:
    """A closed-form schedule: its class name and keyword arguments (typical ones unless ``edges``).

    Now and then the schedule is degenerate: its rates 0 and its factors above 1, so that a power of
    the factor overflows at a large step while the exact rate stays 0 (0 * 2**150).
    """
    name = draw(st.sampled_from(list(SCHEDULES)))
    degenerate = edges and draw(sometimes(4))
    arguments: dict[str, Any] = {}
    for key, options in SCHEDULES[name].items():
        if key not in REQUIRED.get(name, ()) and draw(st.booleans()):
            continue  # left to the default
        typical = options[: max(1, len(options) // 2)]
        if degenerate and key in RATE_KEYS:
            arguments[key] = 0.0
        elif degenerate and key in FACTOR_KEYS:
            arguments[key] = draw(st.sampled_from([2.0, 10.0]))
        else:
            arguments[key] = draw(_value(options if edges else typical))
    return name, arguments


def _expression(name: str, arguments: dict[str, Any]) -> Expr:
    return Expr(call(f"impl.optim.lr_scheduler.{name}", **arguments))


@st.composite
def schedule_expression(draw: st.DrawFn, depth: int = 0, edges: bool = True) -> tuple[Expr, int]:
    """A schedule constructor call, and a step count that marks its landmarks (for the steps to try)."""
    choice = draw(branch(8))
    if choice == 6 and depth < 2:
        parts = draw(st.lists(schedule_expression(depth + 1, edges), min_size=2, max_size=3))
        milestones = (
            _milestones(draw, len(parts) - 1) if edges else sorted({10 * (i + 1) for i in range(len(parts) - 1)})
        )
        expression = Expr(
            call("impl.optim.lr_scheduler.SequentialLR", schedulers=[p for p, _ in parts], milestones=milestones)
        )
        return expression, (milestones[-1] if milestones else 10)
    if choice == 7:
        count = draw(st.integers(0, 3))
        milestones = _milestones(draw, count) if edges else [10 * (i + 1) for i in range(count)]
        rates = draw(st.lists(_value(RATES if edges else RATES[:5]), min_size=count + 1, max_size=count + 1))
        expression = Expr(
            call("impl.optim.lr_scheduler.PiecewiseConstantLR", learning_rates=rates, milestones=milestones)
        )
        return expression, (milestones[-1] if milestones else 10)
    if choice == 5:
        count = draw(st.integers(1, 3))
        milestones = _milestones(draw, count) if edges else [10 * (i + 1) for i in range(count)]
        arguments = {
            "initial_learning_rate": draw(_value(RATES)),
            "gamma": draw(_value(FACTORS)),
            "milestones": milestones,
        }
        return _expression("MultiStepLR", arguments), milestones[-1]
    name, arguments = draw(simple_schedule(edges))
    landmark = next(
        (
            arguments[key]
            for key in ("total_iters", "T_max", "step_size", "total_steps", "warmup_steps", "step_size_up")
            if key in arguments
        ),
        10,
    )
    return _expression(name, arguments), landmark if isinstance(landmark, int) else 10


LARGE_STEPS = [150, 1000, 10**6, 2**31 - 1, 2**31, 2**53 + 1, 2**62, 2**63 - 1]
"""Steps where float32 powers overflow (2**150), and where int32, float64 and int64 run out."""


@st.composite
def global_step(draw: st.DrawFn, landmark: int) -> Any:
    """A step to evaluate at: small, around the landmark, very large, negative, NumPy, or an array."""
    choice = draw(branch(10))
    near = max(0, landmark) + draw(st.sampled_from([0, -1, 1, 2]))
    if choice <= 2:
        return draw(st.integers(0, 20))
    if choice <= 4:
        return max(near, 0)
    if choice <= 6:
        return draw(st.sampled_from(LARGE_STEPS))
    if choice == 7:
        return draw(st.sampled_from([-1, np.int64(max(near, 0)), np.uint64(2**63), np.int32(7)]))
    dtype, largest = draw(st.sampled_from([("int64", 2**63 - 1), ("int32", 2**31 - 1), ("uint32", 2**32 - 1)]))
    choices = [0, 1, max(near, 0), 2 * max(landmark, 1), 150, 10**6, largest]
    values = draw(st.lists(st.sampled_from([min(value, largest) for value in choices]), min_size=1, max_size=5))
    return np.array(values, dtype=dtype)


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    expression, landmark = draw(schedule_expression())
    lines = [f"schedule = {expression}"]
    for step in draw(st.lists(global_step(landmark), min_size=1, max_size=5)):
        lines.append(call("schedule", step))
    return lines


AREA = Area(
    "lr_schedule",
    "learning-rate schedules: edge parameters, very large steps, schedules in sequence",
    frozenset({"lr_schedule"}),
    statements,
)
