"""Conformance checks of the learning-rate schedules (specs/lr_schedule.yaml).

Each schedule is compared, step by step, with its formula written here in plain Python ``math``
(float64, one step at a time), independently of the engine's vectorized NumPy code. The engine
rounds once to float32, so comparisons allow float32 rounding (plus a little for ``pow``/``cos``).
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from csconform.errors import InvalidInputError
from csconform.testing.strategies import global_step_arrays, global_steps

RATES = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)
POSITIVE_RATES = st.floats(min_value=1e-4, max_value=10.0)
ITERS = st.integers(min_value=1, max_value=5000)
STEPS = global_steps(20_000)


def assert_rate(actual: object, expected: float, rtol: float = 4e-7, atol: float = 1e-12) -> None:
    """``actual`` is a 0-d float32 equal to ``expected`` up to float32 rounding."""
    assert isinstance(actual, np.floating | np.ndarray) and np.asarray(actual).dtype == np.float32
    assert np.asarray(actual).shape == ()
    assert math.isclose(float(actual), expected, rel_tol=rtol, abs_tol=atol), (float(actual), expected)


def lr(engine):  # noqa: ANN001, ANN201 - the module under test
    return engine.optim.lr_scheduler


def every_schedule(engine):  # noqa: ANN001, ANN201
    """One instance of every schedule class, for the interface properties."""
    m = lr(engine)
    return [
        m.ConstantLR(learning_rate=0.1),
        m.PolynomialLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=100, power=2.0),
        m.PolynomialLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=100, cycle=True),
        m.LinearLR(initial_learning_rate=0.0, end_learning_rate=0.1, total_iters=50),
        m.ExponentialLR(initial_learning_rate=0.1, total_iters=10, decay_rate=0.9, staircase=True),
        m.InverseExponentialTimeDecayLR(
            initial_learning_rate=0.1, step_exponent=1.5, total_iters=10, decay_rate=0.5, staircase=False
        ),
        m.InverseSquareRootDecayLR(initial_learning_rate=0.1, scale=2.0, warmup_steps=100),
        m.CosineDecayLR(initial_learning_rate=0.1, end_learning_rate=0.001, total_iters=300),
        m.CosineAnnealingLR(initial_learning_rate=0.1, T_max=70, eta_min=0.01),
        m.StepLR(initial_learning_rate=0.1, step_size=30, gamma=0.5),
        m.MultiStepLR(initial_learning_rate=0.1, gamma=0.1, milestones=[10, 200]),
        m.MultiplicativeLR(initial_learning_rate=0.1, multiplier=0.999),
        m.SequentialLR(
            schedulers=[
                m.LinearLR(initial_learning_rate=0.0, end_learning_rate=0.1, total_iters=10),
                m.CosineDecayLR(initial_learning_rate=0.1, end_learning_rate=0.0, total_iters=100),
            ],
            milestones=[10],
        ),
        m.PiecewiseConstantLR(learning_rates=[0.1, 0.05, 0.01], milestones=[100, 1000]),
        m.CyclicLR(base_lr=0.01, max_lr=0.1, step_size_up=20, step_size_down=30, mode="triangular2"),
        m.OneCycleLR(initial_learning_rate=0.004, max_lr=0.1, total_steps=500, pct_start=0.3),
    ]


# --- the interface --------------------------------------------------------------------------------


@pytest.mark.spec("LR-001")
@given(steps=global_step_arrays(max_step=5000))
def test_schedules_map_step_arrays_to_float32_arrays_of_the_same_shape(engine, steps):
    for schedule in every_schedule(engine):
        rates = schedule(steps)
        assert isinstance(rates, np.ndarray) and rates.dtype == np.float32 and rates.shape == steps.shape
        for index in np.ndindex(steps.shape):
            scalar = schedule(int(steps[index]))
            assert np.asarray(scalar).shape == () and np.asarray(scalar).dtype == np.float32
            assert rates[index].tobytes() == np.float32(scalar).tobytes(), (type(schedule).__name__, index)


@pytest.mark.spec("LR-001")
def test_schedules_accept_numpy_integer_scalars_and_unsigned_arrays(engine):
    schedule = lr(engine).StepLR(initial_learning_rate=1.0, step_size=2, gamma=0.5)
    assert float(schedule(np.int32(4))) == 0.25
    assert schedule(np.array([0, 2, 4], dtype=np.uint16)).tolist() == [1.0, 0.5, 0.25]
    largest = np.iinfo(np.int64).max  # an unsigned array may hold every step an int64 holds
    assert schedule(np.array([largest], dtype=np.uint64)).tolist() == [float(schedule(int(largest)))]


@pytest.mark.spec("LR-002")
@given(steps=st.lists(global_steps(3000), min_size=1, max_size=20))
def test_schedules_are_pure_functions_of_the_step(engine, steps):
    first = [every_schedule(engine) for _ in range(2)]
    forward = [[float(s(t)) for t in steps] for s in first[0]]
    backward = [[float(s(t)) for t in reversed(steps)][::-1] for s in first[1]]
    again = [[float(s(t)) for t in steps] for s in first[0]]
    assert forward == backward == again


@pytest.mark.spec("LR-003")
@pytest.mark.parametrize(
    "step",
    [
        -1,
        True,
        1.0,
        2.5,
        "3",
        None,
        [1, 2],
        np.array([1.0, 2.0]),
        np.array([0, -3]),
        np.array([True]),
    ],
    ids=repr,
)
def test_invalid_global_steps_are_refused(engine, step):
    for schedule in every_schedule(engine):
        with pytest.raises(InvalidInputError):
            schedule(step)


@pytest.mark.spec("LR-003")
@pytest.mark.parametrize(
    ("step", "problem"),
    [
        # the refusal names the global step and what is wrong with it: the value, its type or its dtype
        (-1, "-1"),
        (True, "True|bool"),
        (1.0, "1.0|float"),
        (2.5, "2.5|float"),
        (np.array([1.0, 2.0]), "float64"),
        (np.array([0, -3]), "-3"),
        (np.array([True]), "bool"),
    ],
    ids=["negative", "bool", "integral-float", "float", "float-array", "negative-in-array", "bool-array"],
)
def test_refusals_of_invalid_global_steps_name_the_problem(engine, step, problem):
    for schedule in every_schedule(engine):
        with pytest.raises(InvalidInputError, match=rf"global step.*(?<![\w-])({problem})(?!\w)"):
            schedule(step)


@pytest.mark.spec("LR-004")
@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("ConstantLR", {"learning_rate": -0.1}),
        ("ConstantLR", {"learning_rate": float("nan")}),
        ("PolynomialLR", {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 0}),
        ("PolynomialLR", {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": -5}),
        ("PolynomialLR", {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 2.5}),
        ("LinearLR", {"initial_learning_rate": float("inf"), "end_learning_rate": 0.0, "total_iters": 5}),
        ("ExponentialLR", {"initial_learning_rate": 0.1, "total_iters": 0, "decay_rate": 0.5}),
        ("ExponentialLR", {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 0.0}),
        ("InverseSquareRootDecayLR", {"initial_learning_rate": 0.1, "scale": 1.0, "warmup_steps": 0}),
        ("CosineDecayLR", {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 0}),
        ("CosineAnnealingLR", {"initial_learning_rate": 0.1, "T_max": 0}),
        ("StepLR", {"initial_learning_rate": 0.1, "step_size": 0, "gamma": 0.5}),
        ("MultiStepLR", {"initial_learning_rate": 0.1, "gamma": 0.5, "milestones": [5, 5]}),
        ("MultiStepLR", {"initial_learning_rate": 0.1, "gamma": 0.5, "milestones": [10, 3]}),
        ("MultiStepLR", {"initial_learning_rate": 0.1, "gamma": 0.5, "milestones": [0, 3]}),
        ("MultiStepLR", {"initial_learning_rate": 0.1, "gamma": 0.5, "milestones": 7}),
        ("MultiplicativeLR", {"initial_learning_rate": 0.1, "multiplier": 0.0}),
        ("PiecewiseConstantLR", {"learning_rates": [0.1, 0.01], "milestones": [10, 20]}),
        ("PiecewiseConstantLR", {"learning_rates": [0.1, 0.01, 0.001], "milestones": [10]}),
        ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 0}),
        ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "mode": "sawtooth"}),
        ("OneCycleLR", {"initial_learning_rate": 0.01, "max_lr": 0.1, "total_steps": 0}),
        ("OneCycleLR", {"initial_learning_rate": 0.01, "max_lr": 0.1, "total_steps": 100, "pct_start": 1.5}),
        ("OneCycleLR", {"initial_learning_rate": 0.01, "max_lr": 0.1, "total_steps": 4, "pct_start": 0.25}),
    ],
)
def test_invalid_schedule_arguments_are_refused(engine, name, kwargs):
    with pytest.raises(InvalidInputError):
        getattr(lr(engine), name)(**kwargs)


# Valid arguments of every schedule, and which of them are learning rates and which step counts.
VALID_ARGUMENTS = {
    "ConstantLR": {"learning_rate": 0.1},
    "PolynomialLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 10},
    "LinearLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 10},
    "ExponentialLR": {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 0.5},
    "InverseExponentialTimeDecayLR": {
        "initial_learning_rate": 0.1,
        "step_exponent": 1.0,
        "total_iters": 10,
        "decay_rate": 0.5,
    },
    "InverseSquareRootDecayLR": {"initial_learning_rate": 0.1, "scale": 1.0, "warmup_steps": 10},
    "CosineDecayLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 10},
    "CosineAnnealingLR": {"initial_learning_rate": 0.1, "T_max": 10, "eta_min": 0.01},
    "StepLR": {"initial_learning_rate": 0.1, "step_size": 10, "gamma": 0.5},
    "MultiStepLR": {"initial_learning_rate": 0.1, "gamma": 0.5, "milestones": [10, 20]},
    "MultiplicativeLR": {"initial_learning_rate": 0.1, "multiplier": 0.9},
    "PiecewiseConstantLR": {"learning_rates": [0.1, 0.01], "milestones": [10]},
    "CyclicLR": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 10, "step_size_down": 10},
    "OneCycleLR": {"initial_learning_rate": 0.01, "max_lr": 0.1, "total_steps": 100},
}
LEARNING_RATE_ARGUMENTS = (
    "learning_rate",
    "initial_learning_rate",
    "end_learning_rate",
    "eta_min",
    "base_lr",
    "max_lr",
    "learning_rates",
)
STEP_COUNT_ARGUMENTS = ("total_iters", "T_max", "step_size", "total_steps", "step_size_up", "step_size_down")


def _with(kwargs: dict, name: str, value: object) -> dict:
    """``kwargs`` with argument ``name`` set to ``value`` (in every entry of a list argument)."""
    changed = dict(kwargs)
    changed[name] = [value] * len(kwargs[name]) if isinstance(kwargs[name], list) else value
    return changed


@pytest.mark.spec("LR-004")
@pytest.mark.parametrize("name", sorted(VALID_ARGUMENTS))
def test_every_learning_rate_and_step_count_argument_is_checked(engine, name):
    schedule_class = getattr(lr(engine), name)
    valid = VALID_ARGUMENTS[name]
    assert np.isfinite(float(schedule_class(**valid)(5)))
    rates = [argument for argument in valid if argument in LEARNING_RATE_ARGUMENTS]
    counts = [argument for argument in valid if argument in STEP_COUNT_ARGUMENTS]
    assert rates
    for argument in rates:
        for bad in (-0.1, -1e-30, float("nan"), float("inf"), float("-inf")):
            with pytest.raises(InvalidInputError):
                schedule_class(**_with(valid, argument, bad))
    for argument in counts:
        for bad in (0, -1):
            with pytest.raises(InvalidInputError):
                schedule_class(**_with(valid, argument, bad))


@pytest.mark.spec("LR-004", "LR-017")
def test_sequential_lr_needs_one_milestone_fewer_than_schedulers(engine):
    m = lr(engine)
    parts = [m.ConstantLR(learning_rate=0.1), m.ConstantLR(learning_rate=0.2), m.ConstantLR(learning_rate=0.3)]
    for milestones in ([10], [10, 20, 30], []):
        with pytest.raises(InvalidInputError, match="milestones"):
            m.SequentialLR(schedulers=parts, milestones=milestones)
    with pytest.raises(InvalidInputError):
        m.SequentialLR(schedulers=[], milestones=[])
    with pytest.raises(InvalidInputError):
        m.SequentialLR(schedulers=[0.1, 0.2], milestones=[5])
    assert float(m.SequentialLR(schedulers=parts, milestones=[10, 20])(25)) == np.float32(0.3)


# --- the formulas ---------------------------------------------------------------------------------


@pytest.mark.spec("LR-005")
@given(rate=RATES, t=STEPS)
def test_constant_lr(engine, rate, t):
    assert_rate(lr(engine).ConstantLR(learning_rate=rate)(t), rate)


@pytest.mark.spec("LR-006")
@given(init=RATES, end=RATES, total=ITERS, power=st.floats(0.0, 4.0), t=STEPS)
def test_polynomial_lr(engine, init, end, total, power, t):
    schedule = lr(engine).PolynomialLR(
        initial_learning_rate=init, end_learning_rate=end, total_iters=total, power=power
    )
    expected = end if t >= total else (init - end) * (1 - t / total) ** power + end
    assert_rate(schedule(t), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.spec("LR-024")
@given(init=RATES, end=RATES, total=ITERS, power=st.floats(0.0, 4.0), t=STEPS)
def test_polynomial_lr_with_cycle(engine, init, end, total, power, t):
    schedule = lr(engine).PolynomialLR(
        initial_learning_rate=init, end_learning_rate=end, total_iters=total, power=power, cycle=True
    )
    period = total * math.ceil((t + 1) / total)
    expected = end if t >= total else (init - end) * (1 - t / period) ** power + end
    assert_rate(schedule(t), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.spec("LR-024")
def test_polynomial_cycle_keeps_the_end_rate_after_total_iters(engine):
    m = lr(engine)
    cycling = m.PolynomialLR(initial_learning_rate=1.0, end_learning_rate=0.0, total_iters=10, power=2.0, cycle=True)
    plain = m.PolynomialLR(initial_learning_rate=1.0, end_learning_rate=0.0, total_iters=10, power=2.0)
    assert float(cycling(9)) == pytest.approx(0.01)
    assert float(cycling(10)) == 0.0 and float(cycling(19)) == 0.0
    steps = np.arange(40)
    assert np.array_equal(cycling(steps), plain(steps))


@pytest.mark.spec("LR-008")
@given(init=RATES, end=RATES, total=ITERS, t=STEPS)
def test_linear_lr(engine, init, end, total, t):
    m = lr(engine)
    linear = m.LinearLR(initial_learning_rate=init, end_learning_rate=end, total_iters=total)
    expected = end if t >= total else init + (end - init) * t / total
    assert_rate(linear(t), expected, rtol=1e-6, atol=1e-9)
    poly = m.PolynomialLR(initial_learning_rate=init, end_learning_rate=end, total_iters=total, power=1.0)
    assert float(linear(t)) == float(poly(t))


@pytest.mark.spec("LR-008")
@pytest.mark.parametrize("cycle", [False, True])
def test_linear_lr_is_polynomial_lr_with_the_same_arguments(engine, cycle):
    m = lr(engine)
    linear = m.LinearLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=8, cycle=cycle)
    poly = m.PolynomialLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=8, power=1.0, cycle=cycle)
    steps = np.arange(40)  # beyond total_iters too
    assert np.array_equal(linear(steps), poly(steps))


@pytest.mark.spec("LR-009")
@given(init=RATES, total=ITERS, rate=st.floats(0.05, 1.5), staircase=st.booleans(), t=global_steps(5000))
@example(init=0.1, total=1, rate=1.5, staircase=False, t=1751)  # 1.5**1751 leaves float64's range
def test_exponential_lr(engine, init, total, rate, staircase, t):
    schedule = lr(engine).ExponentialLR(
        initial_learning_rate=init, total_iters=total, decay_rate=rate, staircase=staircase
    )
    exponent = t // total if staircase else t / total
    with np.errstate(over="ignore"):  # a growing schedule may leave float32's range (and float64's): inf
        expected = float(np.float32(init * np.float64(rate) ** exponent))
    assert_rate(schedule(t), expected, rtol=2e-6, atol=1e-30)


@pytest.mark.spec("LR-010")
@given(
    init=RATES,
    exponent=st.floats(0.0, 2.0),
    total=ITERS,
    rate=st.floats(0.0, 5.0),
    staircase=st.booleans(),
    t=STEPS,
)
def test_inverse_exponential_time_decay_lr(engine, init, exponent, total, rate, staircase, t):
    schedule = lr(engine).InverseExponentialTimeDecayLR(
        initial_learning_rate=init, step_exponent=exponent, total_iters=total, decay_rate=rate, staircase=staircase
    )
    elapsed = t**exponent / total
    if staircase:
        elapsed = math.floor(elapsed)
    assert_rate(schedule(t), init / (1 + rate * elapsed), rtol=2e-6)


@pytest.mark.spec("LR-011")
@given(init=RATES, scale=st.floats(0.0, 100.0), warmup=st.integers(1, 1000), t=STEPS)
def test_inverse_square_root_decay_lr(engine, init, scale, warmup, t):
    schedule = lr(engine).InverseSquareRootDecayLR(initial_learning_rate=init, scale=scale, warmup_steps=warmup)
    assert_rate(schedule(t), init * scale / math.sqrt(max(t, warmup)), rtol=1e-6)


@pytest.mark.spec("LR-012")
@given(init=RATES, end=RATES, total=ITERS, t=STEPS)
def test_cosine_decay_lr(engine, init, end, total, t):
    schedule = lr(engine).CosineDecayLR(initial_learning_rate=init, end_learning_rate=end, total_iters=total)
    expected = end + (init - end) * 0.5 * (1 + math.cos(math.pi * min(t, total) / total))
    assert_rate(schedule(t), expected, rtol=1e-6, atol=1e-6 * max(init, end, 1e-12))


@pytest.mark.spec("LR-013")
def test_cosine_annealing_eta_min_defaults_to_zero(engine):
    m = lr(engine)
    default = m.CosineAnnealingLR(initial_learning_rate=0.1, T_max=10)
    explicit = m.CosineAnnealingLR(initial_learning_rate=0.1, T_max=10, eta_min=0.0)
    steps = np.arange(0, 30)
    assert np.array_equal(default(steps), explicit(steps))
    assert float(default(10)) == 0.0


@pytest.mark.spec("LR-018")
def test_piecewise_constant_switches_at_each_milestone(engine):
    schedule = lr(engine).PiecewiseConstantLR(learning_rates=[0.1, 0.01, 0.001], milestones=[10, 20])
    rates = schedule(np.array([0, 9, 10, 11, 19, 20, 21]))
    assert rates.tolist() == np.array([0.1, 0.1, 0.01, 0.01, 0.01, 0.001, 0.001], dtype=np.float32).tolist()


@pytest.mark.spec("LR-013")
@given(init=RATES, eta_min=RATES, t_max=ITERS, t=STEPS)
def test_cosine_annealing_lr(engine, init, eta_min, t_max, t):
    schedule = lr(engine).CosineAnnealingLR(initial_learning_rate=init, T_max=t_max, eta_min=eta_min)
    expected = eta_min + (init - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2
    assert_rate(schedule(t), expected, rtol=1e-6, atol=1e-6 * max(init, eta_min, 1e-12))


@pytest.mark.spec("LR-013")
def test_cosine_annealing_is_not_clamped_at_t_max(engine):
    schedule = lr(engine).CosineAnnealingLR(initial_learning_rate=1.0, T_max=10, eta_min=0.0)
    assert float(schedule(10)) == pytest.approx(0.0, abs=1e-7)
    assert float(schedule(20)) == pytest.approx(1.0)


@pytest.mark.spec("LR-014")
@given(init=RATES, step_size=st.integers(1, 500), gamma=st.floats(0.0, 1.0), t=global_steps(5000))
def test_step_lr(engine, init, step_size, gamma, t):
    schedule = lr(engine).StepLR(initial_learning_rate=init, step_size=step_size, gamma=gamma)
    assert_rate(schedule(t), init * gamma ** (t // step_size), rtol=2e-6, atol=1e-30)


@pytest.mark.spec("LR-015")
@given(
    init=RATES,
    gamma=st.floats(0.0, 1.0),
    milestones=st.sets(st.integers(1, 3000), max_size=6).map(sorted),
    t=global_steps(4000),
)
def test_multi_step_lr(engine, init, gamma, milestones, t):
    schedule = lr(engine).MultiStepLR(initial_learning_rate=init, gamma=gamma, milestones=milestones)
    passed = sum(1 for milestone in milestones if milestone <= t)
    assert_rate(schedule(t), init * gamma**passed, rtol=2e-6, atol=1e-30)


@pytest.mark.spec("LR-016")
@given(init=RATES, multiplier=st.floats(0.5, 1.01), t=global_steps(2000))
def test_multiplicative_lr(engine, init, multiplier, t):
    schedule = lr(engine).MultiplicativeLR(initial_learning_rate=init, multiplier=multiplier)
    assert_rate(schedule(t), init * multiplier**t, rtol=2e-6, atol=1e-30)


@pytest.mark.spec("LR-017")
@given(
    rates=st.lists(RATES, min_size=3, max_size=3),
    first=st.integers(1, 500),
    second_length=st.integers(1, 500),
    t=global_steps(1500),
)
def test_sequential_lr_uses_local_steps(engine, rates, first, second_length, t):
    m = lr(engine)
    second = first + second_length
    parts = [
        m.LinearLR(initial_learning_rate=0.0, end_learning_rate=rates[0], total_iters=first),
        m.StepLR(initial_learning_rate=rates[1], step_size=7, gamma=0.5),
        m.ConstantLR(learning_rate=rates[2]),
    ]
    schedule = m.SequentialLR(schedulers=parts, milestones=[first, second])
    if t < first:
        expected = rates[0] * t / first
    elif t < second:
        expected = rates[1] * 0.5 ** ((t - first) // 7)
    else:
        expected = rates[2]
    assert_rate(schedule(t), expected, rtol=1e-6, atol=1e-9)
    local_views = np.array([0, first, second, t])
    assert schedule(local_views).shape == (4,)


@pytest.mark.spec("LR-018")
@given(
    milestones=st.sets(st.integers(1, 3000), min_size=0, max_size=6).map(sorted),
    data=st.data(),
    t=global_steps(4000),
)
def test_piecewise_constant_lr(engine, milestones, data, t):
    rates = data.draw(st.lists(RATES, min_size=len(milestones) + 1, max_size=len(milestones) + 1))
    schedule = lr(engine).PiecewiseConstantLR(learning_rates=rates, milestones=milestones)
    segment = sum(1 for milestone in milestones if milestone <= t)
    assert_rate(schedule(t), rates[segment])


@pytest.mark.spec("LR-019")
@given(
    base=RATES,
    peak=RATES,
    up=st.integers(1, 300),
    down=st.one_of(st.none(), st.integers(1, 300)),
    mode=st.sampled_from(["triangular", "triangular2", "exp_range"]),
    gamma=st.floats(0.99, 1.0),
    t=global_steps(3000),
)
def test_cyclic_lr(engine, base, peak, up, down, mode, gamma, t):
    schedule = lr(engine).CyclicLR(
        base_lr=base, max_lr=peak, step_size_up=up, step_size_down=down, mode=mode, gamma=gamma
    )
    length = up + (up if down is None else down)
    cycle, position = divmod(t, length)  # position: steps into the current cycle
    height = position / up if position <= up else (length - position) / (length - up)
    amplitude = {"triangular": 1.0, "triangular2": 0.5**cycle, "exp_range": gamma**t}[mode]
    expected = base + (peak - base) * height * amplitude
    assert_rate(schedule(t), expected, rtol=2e-6, atol=1e-6 * max(base, peak, 1e-12))


@pytest.mark.spec("LR-020")
@given(
    init=POSITIVE_RATES,
    peak=POSITIVE_RATES,
    total=st.integers(20, 2000),
    pct=st.floats(0.1, 0.45),
    div=st.floats(1.0, 1e4),
    three_phase=st.booleans(),
    strategy=st.sampled_from(["cos", "linear"]),
    data=st.data(),
)
def test_one_cycle_lr(engine, init, peak, total, pct, div, three_phase, strategy, data):
    schedule = lr(engine).OneCycleLR(
        initial_learning_rate=init,
        max_lr=peak,
        total_steps=total,
        pct_start=pct,
        final_div_factor=div,
        three_phase=three_phase,
        anneal_strategy=strategy,
    )
    t = data.draw(global_steps(2 * total), label="t")
    low = init / div
    if three_phase:
        phases = [(pct * total - 1, init, peak), (2 * pct * total - 2, peak, init), (total - 1, init, low)]
    else:
        phases = [(pct * total - 1, init, peak), (total - 1, peak, low)]
    start = 0.0
    for end, phase_from, phase_to in phases:  # the first phase whose end is >= t, else the last
        if t <= end or end == phases[-1][0]:
            progress = min((t - start) / (end - start), 1.0)
            from_rate, to_rate = phase_from, phase_to
            break
        start = end
    if strategy == "cos":
        expected = to_rate + (from_rate - to_rate) * (math.cos(math.pi * progress) + 1) / 2
    else:
        expected = from_rate + (to_rate - from_rate) * progress
    assert_rate(schedule(t), expected, rtol=2e-6, atol=1e-6 * max(init, peak))


@pytest.mark.spec("LR-020")
def test_one_cycle_reaches_its_landmarks(engine):
    schedule = lr(engine).OneCycleLR(
        initial_learning_rate=0.01, max_lr=1.0, total_steps=101, pct_start=0.5, final_div_factor=100.0
    )
    assert float(schedule(0)) == pytest.approx(0.01)
    assert float(schedule(50)) > 0.99  # peak just after pct_start * total_steps - 1 = 49.5
    assert float(schedule(100)) == pytest.approx(1e-4)
    assert float(schedule(10_000)) == pytest.approx(1e-4)


@pytest.mark.spec("LR-020")
def test_the_shortest_one_cycle_has_two_steps(engine):
    # PyTorch's phases for total_steps=2, pct_start=0.75: warm-up ends at 0.75 * 2 - 1 = 0.5, annealing at 1
    schedule = lr(engine).OneCycleLR(
        initial_learning_rate=0.01, max_lr=1.0, total_steps=2, pct_start=0.75, final_div_factor=100.0
    )
    assert float(schedule(0)) == pytest.approx(0.01)
    assert float(schedule(1)) == pytest.approx(1e-4)


# --- vectorization ---------------------------------------------------------------------------------


@pytest.mark.spec("LR-027")
def test_a_million_steps_cost_array_operations_not_a_call_per_step(engine):
    """Measured side by side, so that the machine's speed and load cancel out: one call on a million
    steps against the time one call per step would take (estimated from a hundred single steps)."""
    steps = np.arange(1_000_000, dtype=np.int64)
    sample = [int(step) for step in steps[:: len(steps) // 100]]
    for schedule in every_schedule(engine):
        started = time.perf_counter()
        for step in sample:
            schedule(step)
        one_call_per_step_s = (time.perf_counter() - started) / len(sample) * len(steps)
        started = time.perf_counter()
        rates = schedule(steps)
        one_call_s = time.perf_counter() - started
        assert rates.shape == steps.shape and np.all(np.isfinite(rates))
        assert one_call_s < 0.1 * one_call_per_step_s, (type(schedule).__name__, one_call_s, one_call_per_step_s)


# --- the schedule in the pipelined program -------------------------------------------------------


def step_lr_formula(t: int) -> float:
    return 0.1 * 0.5 ** (t // 2)  # StepLR(initial_learning_rate=0.1, step_size=2, gamma=0.5)


def polynomial_lr_formula(t: int) -> float:
    # PolynomialLR(initial_learning_rate=0.05, end_learning_rate=0.01, total_iters=4), power 1
    return 0.01 if t >= 4 else (0.05 - 0.01) * (1 - t / 4) + 0.01


@pytest.mark.spec("LR-022")
def test_the_pipelined_program_carries_the_schedule_that_drives_every_update(engine):
    engine.nn.manual_seed(0)
    first, second = engine.nn.Linear(4, 5), engine.nn.Linear(5, 3)
    model = engine.nn.Sequential(first, engine.nn.ReLU(), second)
    schedules = [
        lr(engine).StepLR(initial_learning_rate=0.1, step_size=2, gamma=0.5),
        lr(engine).PolynomialLR(initial_learning_rate=0.05, end_learning_rate=0.01, total_iters=4),
    ]
    groups = [
        {"params": layer.parameters(), "lr": schedule}
        for layer, schedule in zip((first, second), schedules, strict=True)
    ]
    optimizer = engine.optim.SGD(groups, lr=0.0)
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, optimizer, execution="pipelined")
    rng = np.random.default_rng(3)
    features = rng.standard_normal((32, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 32)
    dataset = engine.data.Dataset.from_tensor_slices((features, labels)).repeat().batch(8, drop_remainder=True)
    outputs = runner.train(dataset, 6)
    for step in range(6):
        before = [[p.data.copy() for p in layer.parameters()] for layer in (first, second)]
        next(outputs)
        program = runner.systems[0].program
        assert program is not None and program.execution == "pipelined"
        programmed = program.learning_rate_schedules
        assert len(programmed) == 2
        # the programmed schedules are the documented functions of the global step, beyond this run too
        for t in range(12):
            assert math.isclose(float(programmed[0](t)), step_lr_formula(t), rel_tol=4e-7)
            assert math.isclose(float(programmed[1](t)), polynomial_lr_formula(t), rel_tol=4e-7)
        # update number `step` used the programmed value at global step `step`
        for layer, schedule, old in zip((first, second), programmed, before, strict=True):
            rate = np.float32(schedule(step))
            for param, data in zip(layer.parameters(), old, strict=True):
                np.testing.assert_array_equal(param.data, data - rate * param.grad)


# --- defaults ----------------------------------------------------------------------------------------


def schedules_with_and_without_defaults(m):  # noqa: ANN001, ANN201
    """(name, built with the required arguments only, built with the vendor's defaults spelled out)."""
    yield (
        "PolynomialLR",
        m.PolynomialLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=30),
        m.PolynomialLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=30, power=1.0, cycle=False),
    )
    yield (
        "LinearLR",
        m.LinearLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=30),
        m.LinearLR(initial_learning_rate=0.1, end_learning_rate=0.01, total_iters=30, cycle=False),
    )
    yield (
        "ExponentialLR",
        m.ExponentialLR(initial_learning_rate=0.1, total_iters=7, decay_rate=0.5),
        m.ExponentialLR(initial_learning_rate=0.1, total_iters=7, decay_rate=0.5, staircase=False),
    )
    yield (
        "InverseExponentialTimeDecayLR",
        m.InverseExponentialTimeDecayLR(initial_learning_rate=0.1, step_exponent=1.0, total_iters=7, decay_rate=0.5),
        m.InverseExponentialTimeDecayLR(
            initial_learning_rate=0.1, step_exponent=1.0, total_iters=7, decay_rate=0.5, staircase=False
        ),
    )
    yield (
        "InverseSquareRootDecayLR",
        m.InverseSquareRootDecayLR(),
        m.InverseSquareRootDecayLR(initial_learning_rate=1.0, scale=1.0, warmup_steps=1),
    )
    yield (
        "CosineAnnealingLR",
        m.CosineAnnealingLR(initial_learning_rate=0.1, T_max=50),
        m.CosineAnnealingLR(initial_learning_rate=0.1, T_max=50, eta_min=0.0),
    )
    yield (
        "CyclicLR",
        m.CyclicLR(base_lr=0.01, max_lr=0.1),
        m.CyclicLR(base_lr=0.01, max_lr=0.1, step_size_up=2000, step_size_down=2000, mode="triangular", gamma=1.0),
    )
    yield (  # gamma acts in exp_range mode only
        "CyclicLR exp_range",
        m.CyclicLR(base_lr=0.01, max_lr=0.1, mode="exp_range"),
        m.CyclicLR(base_lr=0.01, max_lr=0.1, step_size_up=2000, step_size_down=2000, mode="exp_range", gamma=1.0),
    )
    yield (
        "OneCycleLR",
        m.OneCycleLR(initial_learning_rate=0.004, max_lr=0.1),
        m.OneCycleLR(
            initial_learning_rate=0.004,
            max_lr=0.1,
            total_steps=1000,
            pct_start=0.3,
            final_div_factor=1e4,
            three_phase=False,
            anneal_strategy="cos",
        ),
    )


@pytest.mark.spec("LR-023")
def test_optional_arguments_default_to_the_vendors_values(engine):
    steps = np.arange(0, 9000, dtype=np.int64)  # two CyclicLR cycles, several periods of the others
    for name, implicit, explicit in schedules_with_and_without_defaults(lr(engine)):
        assert np.array_equal(implicit(steps), explicit(steps)), name


ZERO_FACTOR_STEPS = np.array([0, 1, 150, 1100, 1_000_000], dtype=np.int64)


@pytest.mark.spec("LR-025")
@pytest.mark.parametrize(
    ("name", "arguments", "value"),
    [
        ("ExponentialLR", {"initial_learning_rate": 0.0, "total_iters": 1, "decay_rate": 2.0}, 0.0),
        ("StepLR", {"initial_learning_rate": 0.0, "step_size": 1, "gamma": 2.0}, 0.0),
        ("MultiplicativeLR", {"initial_learning_rate": 0.0, "multiplier": 2.0}, 0.0),
        ("MultiStepLR", {"initial_learning_rate": 0.0, "gamma": 1e30, "milestones": [1, 2, 3]}, 0.0),
        (
            "CyclicLR",
            {"base_lr": 0.5, "max_lr": 0.5, "step_size_up": 2, "mode": "exp_range", "gamma": 2.0},
            0.5,
        ),
        (
            "InverseExponentialTimeDecayLR",
            {"initial_learning_rate": 1.0, "step_exponent": 50.0, "total_iters": 1, "decay_rate": 0.0},
            1.0,
        ),
    ],
    ids=[
        "ExponentialLR",
        "StepLR",
        "MultiplicativeLR",
        "MultiStepLR",
        "CyclicLR",
        "InverseExponentialTimeDecayLR",
    ],
)
def test_a_zero_factor_stays_zero_however_large_the_power(engine, name, arguments, value):
    schedule = getattr(lr(engine), name)(**arguments)
    rates = schedule(ZERO_FACTOR_STEPS)
    assert rates.dtype == np.float32
    assert rates.tolist() == [value] * len(ZERO_FACTOR_STEPS)  # never NaN: 0 * inf is not the formula
    assert float(schedule(1100)) == value


@pytest.mark.spec("LR-025")
def test_a_power_beyond_float64_still_gives_the_exact_rate(engine):
    schedule = lr(engine).ExponentialLR(initial_learning_rate=1e-300, total_iters=1, decay_rate=2.0)
    exact = math.ldexp(1e-300, 1100)  # 1e-300 * 2**1100, about 1.4e31: finite in float32
    assert math.isclose(float(schedule(1100)), float(np.float32(exact)), rel_tol=1e-7)
    assert float(schedule(2000)) == math.inf  # 1e-300 * 2**2000 is beyond float32's range


@pytest.mark.spec("LR-026")
@pytest.mark.parametrize(
    ("step", "problem"),
    [
        (2**63, "int64"),
        (np.uint64(2**63), "int64"),
        (2**64, "int64"),
        (np.array([0, 2**63], dtype=np.uint64), "int64"),
        (-(2**70), ">= 0"),
    ],
    ids=["two-to-the-63", "uint64-scalar", "two-to-the-64", "uint64-array", "far-below-zero"],
)
def test_a_global_step_outside_int64_is_refused(engine, step, problem):
    schedules = (
        lr(engine).ConstantLR(learning_rate=0.1),
        lr(engine).MultiStepLR(initial_learning_rate=0.1, gamma=0.5, milestones=[1]),
    )
    for schedule in schedules:
        with pytest.raises(InvalidInputError, match=re.escape(problem)):
            schedule(step)


@pytest.mark.spec("LR-025")
@pytest.mark.parametrize(
    ("name", "arguments", "step", "exact"),
    [
        (
            "ExponentialLR",
            {"initial_learning_rate": 0.875, "total_iters": 1, "decay_rate": 0.9154576164199499},
            182,
            0.875 * 0.9154576164199499**182,
        ),
        ("MultiplicativeLR", {"initial_learning_rate": 1.0, "multiplier": 0.9}, 150, 0.9**150),
        (
            "PolynomialLR",
            {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 29, "power": 2.0},
            18,
            0.1 * (1 - 18 / 29) ** 2,
        ),
        ("CosineAnnealingLR", {"initial_learning_rate": 1.0, "T_max": 7}, 3, (1 + math.cos(math.pi * 3 / 7)) / 2),
        (
            "LinearLR",
            {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 29},
            18,
            0.1 * (1 - 18 / 29),
        ),
    ],
    ids=["ExponentialLR", "MultiplicativeLR", "PolynomialLR", "CosineAnnealingLR", "LinearLR"],
)
def test_a_rate_is_its_exact_value_rounded_once(engine, name, arguments, step, exact):
    check_rounded_once(engine, name, arguments, step, exact)


@pytest.mark.spec("LR-025")
@pytest.mark.parametrize(
    ("name", "arguments", "step", "exact"),
    [
        # 2**53 + 1 is no float64: the phase comes from the integer step (193 of a 200-step period)
        (
            "CosineAnnealingLR",
            {"initial_learning_rate": 0.0, "T_max": 100, "eta_min": 0.01},
            2**53 + 1,
            0.01 - 0.01 * (1 + math.cos(math.pi * 193 / 100)) / 2,
        ),
        # a cycle of 3 steps up and 5 down; 2**53 + 3 is 3 steps into a cycle: the top
        ("CyclicLR", {"base_lr": 0.1, "max_lr": 1.0, "step_size_up": 3, "step_size_down": 5}, 2**53 + 3, 1.0),
        (
            "CyclicLR",
            {"base_lr": 0.1, "max_lr": 1.0, "step_size_up": 3, "step_size_down": 5},
            2**53 + 6,
            0.1 + 0.9 * (2 / 5),
        ),
    ],
    ids=["CosineAnnealingLR", "CyclicLR-top", "CyclicLR-falling"],
)
def test_a_periodic_rate_beyond_float64_integers_is_exact(engine, name, arguments, step, exact):
    check_rounded_once(engine, name, arguments, step, exact)


def check_rounded_once(engine, name, arguments, step, exact):  # noqa: ANN001, ANN201
    rate = getattr(lr(engine), name)(**arguments)(step)
    ulp = float(np.spacing(np.float32(exact)))
    # one rounding is at most half a float32 ulp away (plus the float64 error of the exact value here)
    assert abs(float(rate) - exact) <= 0.5001 * ulp, (float(rate), exact, abs(float(rate) - exact) / ulp)
