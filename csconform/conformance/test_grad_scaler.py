"""Conformance checks of the GradScaler, dynamic loss scaling and optimizer_step (specs/grad_scaler.yaml).

Expectations are written here from the spec, independently of the engine. The whole protocol is
also explored by the shipped state machine (csconform.testing.grad_scaler), whose reference model
shares no code with the engine; it names the rule each failure breaks, so the matrix blames that
rule alone. No rule rests on the machine: each of its rules also has checks with fixed inputs here
(tests/meta/test_traceability.py keeps it so).
"""

from __future__ import annotations

import copy
import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

from csconform.errors import GradScalerConfigError, GradScalerUsageError, NonRecoverableNaNError
from csconform.testing.grad_scaler import RULES as GRAD_SCALER_MACHINE_RULES
from csconform.testing.grad_scaler import GradScalerMachine, LossScaleModel, bitwise_equal, check_scaler_state
from csconform.testing.strategies import (
    dynamic_grad_scaler_configs,
    finite_gradients,
    gradients_with_nonfinite,
    loss_scales,
)
from csconform.testing.violations import RuleViolation, expect

SHAPES = ((3, 2), (4,))
INF = float("inf")


# --- helpers: a tiny training setup with gradients set by hand -------------------------------------


def make_setup(engine, lr=0.125, momentum=0.5):  # noqa: ANN001, ANN201
    params = [engine.nn.Parameter(np.linspace(-1.0, 1.0, int(np.prod(s)), dtype=np.float32).reshape(s)) for s in SHAPES]
    return params, engine.optim.SGD(params, lr=lr, momentum=momentum)


def unit_grads(value: float = 0.25) -> list[np.ndarray]:
    return [np.full(shape, value, dtype=np.float32) for shape in SHAPES]


def overflow_grads(kind: float = INF) -> list[np.ndarray]:
    grads = unit_grads()
    grads[1][2] = kind
    return grads


def set_scaled(params, grads, scale) -> None:  # noqa: ANN001
    with np.errstate(invalid="ignore", over="ignore"):
        for param, grad in zip(params, grads, strict=True):
            param.grad = np.asarray(grad, dtype=np.float32) * np.float32(scale)


def scaled_setup(engine, **scaler_options):  # noqa: ANN001, ANN003, ANN201
    """make_setup's parameters and optimizer, and a GradScaler made with ``scaler_options`` whose scale
    multiplies the parameters' unit gradients, as after a scaled backward."""
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(**scaler_options)
    set_scaled(params, unit_grads(), scaler.get_scale())
    return params, optimizer, scaler


def seeded_fc_mnist(engine, seed: int, hidden: int = 8, inputs: int = 6, classes: int = 3):  # noqa: ANN001, ANN201
    """A small fc_mnist whose weights are drawn after ``manual_seed(seed)``: two built with one seed start
    identical, so two ways of training them can be compared bit for bit."""
    engine.nn.manual_seed(seed)
    return engine.nn.fc_mnist(hidden=hidden, inputs=inputs, classes=classes)


def iteration(scaler, params, optimizer, finite: bool = True):  # noqa: ANN001, ANN201
    """One loop iteration with the current scale applied to known gradients; returns step's result."""
    set_scaled(params, unit_grads() if finite else overflow_grads(), scaler.get_scale())
    result = scaler.step(optimizer)
    scaler.update()
    return result


def float32(value: float) -> float:
    """``value`` rounded to float32, as a Python float."""
    return float(np.float32(value))


def snapshot(params, optimizer):  # noqa: ANN001, ANN201
    """The training state a skipped or refused step must leave alone: weights, per-parameter optimizer
    state (momentum, moments) and the global step."""
    return [p.data.copy() for p in params], copy.deepcopy(optimizer.state_dict()["state"]), int(optimizer.global_step)


def dynamic_state(loss_scale: float, *, steps: int, overflows: int, skipped: int) -> dict[str, float]:
    """A dynamic scaler's whole state_dict: the scale, the updates and overflows since the last
    rescale, and the steps skipped in all."""
    return {
        "loss_scale": loss_scale,
        "steps_since_rescale": steps,
        "overflows_since_rescale": overflows,
        "num_skipped_steps": skipped,
    }


# --- the shipped state machine ----------------------------------------------------------------------


@pytest.mark.spec(*GRAD_SCALER_MACHINE_RULES)
def test_grad_scaler_state_machine(engine):
    run_state_machine_as_test(
        GradScalerMachine.for_engine(engine), settings=settings(max_examples=40, stateful_step_count=30)
    )


# --- interface ------------------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-001")
def test_amp_offers_the_three_entry_points(engine):
    amp = engine.amp
    assert callable(amp.GradScaler) and callable(amp.optimizer_step)
    returned = amp.set_half_dtype("bfloat16")
    assert engine.precision.half_dtype_name() == "bfloat16"
    assert returned == engine.precision.set_half_dtype("bfloat16")
    amp.set_half_dtype("float16")
    assert engine.precision.half_dtype_name() == "float16"


@pytest.mark.spec("GRADSCALER-002")
def test_constructor_signature_and_methods(engine):
    parameters = inspect.signature(engine.amp.GradScaler).parameters
    assert list(parameters) == [
        "loss_scale",
        "init_scale",
        "steps_per_increase",
        "min_loss_scale",
        "max_loss_scale",
        "overflow_tolerance",
        "max_gradient_norm",
    ]
    defaults = {name: p.default for name, p in parameters.items()}
    assert defaults.pop("overflow_tolerance") == 0.0
    assert all(value is None for value in defaults.values())
    scaler = engine.amp.GradScaler()
    for method in (
        "scale",
        "get_scale",
        "unscale_",
        "step",
        "step_if_finite",
        "clip_gradients_and_return_isfinite",
        "update",
        "state_dict",
        "load_state_dict",
    ):
        assert callable(getattr(scaler, method)), method


# --- configuration ----------------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-003")
@pytest.mark.parametrize("half, maximum", [("float16", 2.0**15), ("bfloat16", 2.0**15), ("cbfloat16", 2.0**31)])
def test_dynamic_defaults(engine, half, maximum):
    engine.precision.set_half_dtype(half)
    params, optimizer = make_setup(engine)  # the package's GradScaler manages the optimizers that exist
    scaler = engine.amp.GradScaler(loss_scale="dynamic")
    assert scaler.get_scale() == maximum  # init_scale defaults to max_loss_scale
    # max_loss_scale: growth is clamped at the maximum.
    grower = engine.amp.GradScaler(loss_scale="dynamic", steps_per_increase=0)
    iteration(grower, params, optimizer)
    assert grower.get_scale() == maximum
    # min_loss_scale = 2^-14: back-off stops there.
    shrinker = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**-13)
    iteration(shrinker, params, optimizer, finite=False)
    assert shrinker.get_scale() == 2.0**-14


@pytest.mark.spec("GRADSCALER-003")
def test_steps_per_increase_defaults_to_2000(engine):
    params, optimizer = make_setup(engine, momentum=0.0)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=1.0)
    for _ in range(2000):
        iteration(scaler, params, optimizer)
    assert scaler.get_scale() == 1.0 and scaler.state_dict()["steps_since_rescale"] == 2000
    iteration(scaler, params, optimizer)
    assert scaler.get_scale() == 2.0 and scaler.state_dict()["steps_since_rescale"] == 0


@pytest.mark.spec("GRADSCALER-041")
@pytest.mark.parametrize("falsy", [None, 0, 0.0, False, ""])
def test_falsy_loss_scale_is_static_one(engine, falsy):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=falsy)
    assert scaler.get_scale() == 1.0
    assert scaler.state_dict() == {"loss_scale": 1.0}
    with np.errstate(invalid="ignore", over="ignore"):  # static scaling steps on the overflow
        iteration(scaler, params, optimizer, finite=False)
    assert scaler.get_scale() == 1.0


@pytest.mark.spec("GRADSCALER-041")
@given(scale=loss_scales(-8, 24), overflow=st.booleans())
def test_numeric_loss_scale_is_static(engine, scale, overflow):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=scale, init_scale=2.0, steps_per_increase=0)
    with np.errstate(invalid="ignore", over="ignore"):  # static scaling steps on the overflow
        for _ in range(3):
            iteration(scaler, params, optimizer, finite=not overflow)
    assert scaler.get_scale() == scale and scaler.state_dict() == {"loss_scale": scale}


@pytest.mark.spec("GRADSCALER-041")
@given(init=loss_scales(-14, 15))
def test_dynamic_loss_scale_starts_at_init_scale(engine, init):
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=init)
    assert scaler.get_scale() == init
    assert set(scaler.state_dict()) == {
        "loss_scale",
        "steps_since_rescale",
        "overflows_since_rescale",
        "num_skipped_steps",
    }


@pytest.mark.spec("GRADSCALER-041")
@pytest.mark.parametrize(
    ("half", "arguments", "start"),
    [
        # init_scale left out is the half dtype's default maximum, whatever max_loss_scale says
        ("float16", {"max_loss_scale": 2.0**20}, 2.0**15),
        ("cbfloat16", {"max_loss_scale": 2.0**40}, 2.0**31),
        ("bfloat16", {"max_loss_scale": 2.0**10}, 2.0**10),
        ("cbfloat16", {"max_loss_scale": 2.0**20}, 2.0**20),
        # an init_scale above max_loss_scale starts at the maximum
        ("float16", {"init_scale": 2.0**12, "max_loss_scale": 2.0**10}, 2.0**10),
        ("float16", {"init_scale": 2.0**18}, 2.0**15),
    ],
    ids=[
        "max-above-default",
        "cbfloat16-max-above-default",
        "max-below-default",
        "cbfloat16-max-below",
        "init-above-max",
        "init-above-default-max",
    ],
)
def test_dynamic_scale_starts_at_the_smaller_of_init_and_max(engine, half, arguments, start):
    engine.precision.set_half_dtype(half)
    assert engine.amp.GradScaler(loss_scale="dynamic", **arguments).get_scale() == start


@pytest.mark.spec("GRADSCALER-042")
def test_dynamic_scale_is_a_float32_value(engine):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(
        loss_scale="dynamic", init_scale=0.3, min_loss_scale=0.1, max_loss_scale=0.7, steps_per_increase=1
    )
    assert scaler.get_scale() == float32(0.3) != 0.3
    seen = []
    for finite in (True, True, True, True, False, False, False, True, True):
        iteration(scaler, params, optimizer, finite=finite)
        seen.append(scaler.get_scale())
    # doubled, clamped at float32(0.7), halved exactly, clamped at float32(0.1), doubled
    expected = [0.3, 0.6, 0.6, 0.7, 0.35, 0.175, 0.1, 0.1, 0.2]
    assert seen == [float32(value) for value in expected]
    assert scaler.state_dict()["loss_scale"] == float32(0.2)
    restored = engine.amp.GradScaler(loss_scale="dynamic", min_loss_scale=0.1, max_loss_scale=0.7)
    restored.load_state_dict({**scaler.state_dict(), "loss_scale": 0.3})
    assert restored.get_scale() == float32(0.3)
    static = engine.amp.GradScaler(loss_scale=0.3)
    assert static.get_scale() == 0.3 and static.state_dict() == {"loss_scale": 0.3}


@pytest.mark.spec("GRADSCALER-034")
@given(exponent=st.floats(min_value=-60.0, max_value=-14.0, exclude_max=True))
def test_min_loss_scale_below_two_to_minus_14_is_refused(engine, exponent):
    with pytest.raises(GradScalerConfigError, match="^min_loss_scale too small$") as caught:
        engine.amp.GradScaler(loss_scale="dynamic", min_loss_scale=2.0**exponent)
    assert isinstance(caught.value, ValueError)


@pytest.mark.spec("GRADSCALER-034")
def test_min_loss_scale_of_two_to_minus_14_is_accepted(engine):
    engine.amp.GradScaler(loss_scale="dynamic", min_loss_scale=2.0**-14, init_scale=1.0)


@pytest.mark.spec("GRADSCALER-035")
@pytest.mark.parametrize("tolerance", [-1e-9, -0.5, -3])
def test_negative_overflow_tolerance_is_refused(engine, tolerance):
    with pytest.raises(GradScalerConfigError) as caught:
        engine.amp.GradScaler(loss_scale="dynamic", overflow_tolerance=tolerance)
    assert isinstance(caught.value, ValueError)
    engine.amp.GradScaler(loss_scale="dynamic", overflow_tolerance=0)


@pytest.mark.spec("GRADSCALER-040")
@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"loss_scale": "dynamic", "overflow_tolerance": float("nan")}, "overflow_tolerance"),
        ({"loss_scale": "Dynamic"}, "loss_scale"),
        ({"loss_scale": "static"}, "loss_scale"),
        ({"loss_scale": -2.0}, "loss_scale"),
        ({"loss_scale": float("nan")}, "loss_scale"),
        ({"loss_scale": float("inf")}, "loss_scale"),
        ({"loss_scale": "dynamic", "init_scale": 0.0}, "init_scale"),
        ({"loss_scale": "dynamic", "init_scale": -1.0}, "init_scale"),
        ({"loss_scale": "dynamic", "min_loss_scale": float("inf")}, "min_loss_scale"),
        ({"loss_scale": "dynamic", "max_loss_scale": float("inf")}, "max_loss_scale"),
        ({"loss_scale": "dynamic", "min_loss_scale": 4.0, "max_loss_scale": 2.0}, "max_loss_scale"),
        ({"loss_scale": "dynamic", "steps_per_increase": -1}, "steps_per_increase"),
        ({"loss_scale": "dynamic", "steps_per_increase": 2.5}, "steps_per_increase"),
        ({"loss_scale": "dynamic", "max_gradient_norm": 0.0}, "max_gradient_norm"),
        ({"loss_scale": "dynamic", "max_gradient_norm": -1.0}, "max_gradient_norm"),
    ],
    ids=repr,
)
def test_invalid_arguments_are_refused(engine, kwargs, argument):
    with pytest.raises(GradScalerConfigError, match=rf"\b{argument}\b"):  # the refusal names the argument
        engine.amp.GradScaler(**kwargs)


@pytest.mark.spec("GRADSCALER-040")
def test_the_largest_finite_float32_is_a_valid_scale(engine):
    largest = float(np.finfo(np.float32).max)
    assert engine.amp.GradScaler(loss_scale=largest).get_scale() == largest
    dynamic = engine.amp.GradScaler(loss_scale="dynamic", init_scale=largest, max_loss_scale=largest)
    assert dynamic.get_scale() == largest


# --- refusals of the protocol ------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-007")
@pytest.mark.parametrize("new_scale", [1024.0, 0.0])  # 0 is a new scale too, not "none given"
@pytest.mark.parametrize("loss_scale", ["dynamic", 8.0])
def test_update_with_new_scale_is_refused(engine, loss_scale, new_scale):
    params, optimizer, scaler = scaled_setup(engine, loss_scale=loss_scale, init_scale=4.0)
    scaler.step(optimizer)
    before = scaler.state_dict()
    with pytest.raises(GradScalerUsageError):
        scaler.update(new_scale)
    assert scaler.state_dict() == before
    scaler.update()


@pytest.mark.spec("GRADSCALER-037")
@pytest.mark.parametrize("loss_scale", ["dynamic", None])
def test_step_twice_before_update_is_refused(engine, loss_scale):
    params, optimizer, scaler = scaled_setup(engine, loss_scale=loss_scale, init_scale=4.0)
    scaler.step(optimizer)
    state = snapshot(params, optimizer)
    with pytest.raises(GradScalerUsageError) as caught:
        scaler.step(optimizer)
    assert isinstance(caught.value, RuntimeError)
    assert bitwise_equal(snapshot(params, optimizer), state)
    scaler.update()
    set_scaled(params, unit_grads(), scaler.get_scale())
    scaler.step(optimizer)  # a new iteration may step again


@pytest.mark.spec("GRADSCALER-038")
def test_step_if_finite_after_step_or_without_a_check_is_refused(engine):
    params, optimizer, scaler = scaled_setup(engine, loss_scale="dynamic", init_scale=4.0)
    with pytest.raises(GradScalerUsageError):
        scaler.step_if_finite(optimizer)
    scaler.step(optimizer)
    state = snapshot(params, optimizer)
    with pytest.raises(GradScalerUsageError):
        scaler.step_if_finite(optimizer)
    assert bitwise_equal(snapshot(params, optimizer), state)
    scaler.update()


@pytest.mark.spec("GRADSCALER-044")
@pytest.mark.parametrize("loss_scale", ["dynamic", 8.0])
def test_step_after_step_if_finite_is_refused(engine, loss_scale):
    params, optimizer, scaler = scaled_setup(engine, loss_scale=loss_scale, init_scale=4.0)
    scaler.unscale_(optimizer)
    assert scaler.clip_gradients_and_return_isfinite([optimizer]) is True
    scaler.step_if_finite(optimizer)
    state = snapshot(params, optimizer)
    assert state[2] == 1  # step_if_finite stepped once
    with pytest.raises(GradScalerUsageError) as caught:
        scaler.step(optimizer)
    assert isinstance(caught.value, RuntimeError)
    assert bitwise_equal(snapshot(params, optimizer), state)  # not a second update with the same gradients
    scaler.update()


@pytest.mark.spec("GRADSCALER-045")
@pytest.mark.parametrize("loss_scale", ["dynamic", 8.0])
@pytest.mark.parametrize("after", ["unscale_", "step"])
def test_scale_after_unscale_or_step_is_refused(engine, loss_scale, after):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, init_scale=4.0)
    if after == "unscale_":  # (step() after a scale() without unscale_ is a known departure of the vendor's)
        scaler.scale(np.float32(1.0))
        scaler.scale(np.float32(2.0))  # several losses before the gradients are handled: fine
    set_scaled(params, unit_grads(), scaler.get_scale())
    getattr(scaler, after)(optimizer)
    with pytest.raises(GradScalerUsageError, match="already scaled") as caught:
        scaler.scale(np.float32(1.0))
    assert isinstance(caught.value, RuntimeError)
    if after == "unscale_":
        scaler.step(optimizer)
    scaler.update()
    assert float(scaler.scale(np.float32(1.0))) == scaler.get_scale()  # a new iteration scales again


@pytest.mark.spec("GRADSCALER-045")
def test_a_static_scale_of_one_scales_at_any_time(engine):
    params, optimizer, scaler = scaled_setup(engine)
    scaler.unscale_(optimizer)
    assert float(scaler.scale(np.float32(3.0))) == 3.0


@pytest.mark.spec("GRADSCALER-009")
def test_unscale_after_step_is_refused(engine):
    params, optimizer, scaler = scaled_setup(engine, loss_scale="dynamic", init_scale=4.0)
    scaler.step(optimizer)
    grads = [p.grad.copy() for p in params]
    with pytest.raises(GradScalerUsageError):
        scaler.unscale_(optimizer)
    assert all(bitwise_equal(p.grad, g) for p, g in zip(params, grads, strict=True))


@pytest.mark.spec("GRADSCALER-036")
@pytest.mark.parametrize("loss_scale", ["dynamic", 16.0])
def test_unscaling_twice_divides_once(engine, loss_scale):
    params, optimizer, scaler = scaled_setup(engine, loss_scale=loss_scale, init_scale=16.0)
    scaler.unscale_(optimizer)
    scaler.unscale_(optimizer)
    assert all(bitwise_equal(p.grad, g) for p, g in zip(params, unit_grads(), strict=True))


# --- scaling and unscaling ------------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-011")
@given(exponent=st.integers(-4, 8))
def test_scale_multiplies_loss_and_gradients(engine, exponent):
    scale = 2.0**exponent
    engine.nn.manual_seed(0)
    model = engine.nn.Linear(5, 3)
    x = np.linspace(-1.0, 1.0, 20, dtype=np.float32).reshape(4, 5)
    y = np.array([0, 2, 1, 0])
    loss = engine.nn.cross_entropy(model(x), y)
    loss.backward()
    plain = [p.grad.copy() for p in model.parameters()]
    model.zero_grad()
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=scale)
    assert scaler.get_scale() == scale
    scaled_loss = scaler.scale(engine.nn.cross_entropy(model(x), y))
    assert float(scaled_loss.value) == pytest.approx(float(loss.value) * scale, rel=1e-6)
    scaled_loss.backward()
    for param, grad in zip(model.parameters(), plain, strict=True):
        np.testing.assert_allclose(param.grad, grad * np.float32(scale), rtol=2e-3, atol=1e-6 * scale)


@pytest.mark.spec("GRADSCALER-011")
@given(scale=loss_scales(-4, 20), value=st.floats(-100.0, 100.0, width=32))
def test_scale_of_a_plain_number(engine, scale, value):
    scaler = engine.amp.GradScaler(loss_scale=scale)
    # the exact product (scale is a power of two) rounded once to float32: a subnormal loss may
    # round to zero, as it does on the system
    assert float(scaler.scale(np.float32(value))) == float(np.float32(value * scale))


@pytest.mark.spec("GRADSCALER-012")
@given(
    loss_scale=st.one_of(st.just("dynamic"), loss_scales(-6, 20)),
    scale=loss_scales(-6, 20),
    data=st.data(),
)
def test_unscale_divides_gradients(engine, loss_scale, scale, data):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, init_scale=scale)
    current = scaler.get_scale()
    scaled = [data.draw(finite_gradients(s, max_magnitude=1e3)) for s in SHAPES]
    for param, grad in zip(params, scaled, strict=True):
        param.grad = grad
    scaler.unscale_(optimizer)
    for param, grad in zip(params, scaled, strict=True):
        assert bitwise_equal(param.grad, grad * np.float32(1.0 / current))


@pytest.mark.spec("GRADSCALER-012")
@pytest.mark.parametrize("loss_scale, scale", [("dynamic", 2.0**10), ("dynamic", 3.0), (8.0, 8.0), (None, 1.0)])
def test_unscale_multiplies_known_gradients_by_the_float32_reciprocal(engine, loss_scale, scale):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, init_scale=scale)
    scaled = [
        np.array([[3.0, -1.5], [0.0, 7.25], [1e-3, -2e3]], dtype=np.float32),
        np.array([1.0, -0.5, 96.0, 1e-30], dtype=np.float32),
    ]
    for param, grad in zip(params, scaled, strict=True):
        param.grad = grad.copy()
    scaler.unscale_(optimizer)
    reciprocal = np.float32(1.0 / scale)
    for param, grad in zip(params, scaled, strict=True):
        assert bitwise_equal(param.grad, grad * reciprocal)


# --- finiteness and skipping ----------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-013", "GRADSCALER-015")
@given(broken=st.integers(0, 1), data=st.data())
def test_any_inf_or_nan_skips_the_step(engine, broken, data):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=8.0)
    iteration(scaler, params, optimizer)  # some optimizer state exists
    grads = [
        data.draw(gradients_with_nonfinite(s) if i == broken else finite_gradients(s)) for i, s in enumerate(SHAPES)
    ]
    set_scaled(params, grads, scaler.get_scale())
    before = snapshot(params, optimizer)
    result = scaler.step(optimizer)
    scaler.update()  # the iteration is over: a skipped step has left no trace
    # an overflow the scaler did not count went undetected (and was not skipped either)
    detected = scaler.state_dict()["num_skipped_steps"] == 1
    blamed = ("GRADSCALER-015",) if detected else ("GRADSCALER-013", "GRADSCALER-015")
    expect(result is None, blamed, f"step() after an inf or NaN gradient returned {result!r}, not None")
    expect(bitwise_equal(snapshot(params, optimizer), before), blamed, "the skipped step changed the training state")
    expect(detected, blamed, "the skipped step was not counted in num_skipped_steps")


@pytest.mark.spec("GRADSCALER-013")
@pytest.mark.parametrize("kind", [INF, -INF, float("nan")], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("parameter, index", [(0, (0, 0)), (1, (3,))], ids=["first", "last"])
def test_one_inf_or_nan_element_makes_the_iteration_non_finite(engine, kind, parameter, index):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=8.0)
    grads = unit_grads()
    grads[parameter][index] = kind
    set_scaled(params, grads, 8.0)
    assert scaler.step(optimizer) is None
    scaler.update()
    assert optimizer.global_step == 0
    assert scaler.get_scale() == 4.0 and scaler.state_dict()["num_skipped_steps"] == 1


@pytest.mark.spec("GRADSCALER-013")
def test_finite_gradients_whose_norm_overflows_float32_are_an_overflow(engine):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=1.0)
    huge = [np.full(s, 3e19, dtype=np.float32) for s in SHAPES]  # each square is 9e38 > float32 max
    assert all(np.all(np.isfinite(g)) for g in huge)
    set_scaled(params, huge, 1.0)
    before = snapshot(params, optimizer)
    assert scaler.step(optimizer) is None
    scaler.update()
    assert bitwise_equal(snapshot(params, optimizer), before)
    assert scaler.get_scale() == 0.5
    # Just below: a square-sum that fits float32 is finite.
    set_scaled(params, [np.full(s, 1e18, dtype=np.float32) for s in SHAPES], scaler.get_scale())
    scaler.step(optimizer)
    scaler.update()
    assert optimizer.global_step == 1


@pytest.mark.spec("GRADSCALER-013")
def test_norm_is_taken_after_unscaling(engine):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**15)
    # Scaled, the square-sum would overflow float32 (about 1e41); unscaled it is about 1e32.
    set_scaled(params, [np.full(s, 1e16, dtype=np.float32) for s in SHAPES], 2.0**15)
    assert all(np.all(np.isfinite(p.grad)) for p in params)
    scaler.step(optimizer)
    scaler.update()
    assert optimizer.global_step == 1


@pytest.mark.spec("GRADSCALER-014")
@given(scale=st.one_of(st.none(), loss_scales(-4, 16)), kind=st.sampled_from([INF, -INF, float("nan")]))
def test_static_scaling_never_skips(engine, scale, kind):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=scale, max_gradient_norm=1.0)
    set_scaled(params, overflow_grads(kind), scaler.get_scale())
    with np.errstate(invalid="ignore", over="ignore"):
        scaler.step(optimizer)
    assert optimizer.global_step == 1
    assert not np.all(np.isfinite(params[1].data))  # the overflow reached the weights
    scaler.update()
    assert scaler.get_scale() == (scale or 1.0) and scaler.state_dict() == {"loss_scale": scale or 1.0}


@pytest.mark.spec("GRADSCALER-014")
@pytest.mark.parametrize("loss_scale", [None, 1024.0])
@pytest.mark.parametrize("kind", [INF, float("nan")], ids=["inf", "nan"])
def test_static_scaling_steps_on_every_overflow_and_keeps_its_scale(engine, loss_scale, kind):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale)
    with np.errstate(invalid="ignore", over="ignore"):
        for _ in range(3):
            set_scaled(params, overflow_grads(kind), scaler.get_scale())
            scaler.step(optimizer)
            scaler.update()
    assert optimizer.global_step == 3
    assert not np.all(np.isfinite(params[1].data))  # the overflow reached the weights
    assert scaler.get_scale() == (loss_scale or 1.0) and scaler.state_dict() == {"loss_scale": loss_scale or 1.0}


@pytest.mark.spec("GRADSCALER-015")
def test_skipped_step_does_not_advance_the_learning_rate_schedule(engine):
    schedule = engine.optim.lr_scheduler.StepLR(initial_learning_rate=1.0, step_size=1, gamma=0.5)
    params, optimizer = make_setup(engine, lr=schedule, momentum=0.0)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=4.0)
    iteration(scaler, params, optimizer)  # uses lr(0) = 1
    assert optimizer.global_step == 1
    assert iteration(scaler, params, optimizer, finite=False) is None
    assert optimizer.global_step == 1
    before = params[0].data.copy()
    iteration(scaler, params, optimizer)  # must use lr(1) = 0.5, not lr(2)
    np.testing.assert_array_equal(params[0].data, before - np.float32(0.5) * np.float32(0.25))
    assert optimizer.global_step == 2


@pytest.mark.spec("GRADSCALER-015")
def test_skipped_step_keeps_adam_state_bit_identical(engine):
    params = [engine.nn.Parameter(np.ones(s, dtype=np.float32)) for s in SHAPES]
    optimizer = engine.optim.Adam(params, lr=0.01)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**10)
    for _ in range(3):
        iteration(scaler, params, optimizer)
    before = snapshot(params, optimizer)
    for kind in (INF, -INF, float("nan")):
        set_scaled(params, overflow_grads(kind), scaler.get_scale())
        assert scaler.step(optimizer) is None
        scaler.update()
        assert bitwise_equal(snapshot(params, optimizer), before)
    assert scaler.state_dict()["num_skipped_steps"] == 3


# --- step, step_if_finite, clipping --------------------------------------------------------------------


def recording_closure():  # noqa: ANN201
    """A closure for ``optimizer.step(closure=...)`` that counts its calls and returns a marker."""
    calls: list[int] = []

    def closure() -> str:
        calls.append(1)
        return "the closure's loss"

    return closure, calls


def step_with_closure(step, optimizer, closure, positional: bool):  # noqa: ANN001, ANN201
    """``step(optimizer, closure)`` or ``step(optimizer, closure=closure)``: both must reach ``optimizer.step``."""
    return step(optimizer, closure) if positional else step(optimizer, closure=closure)


@pytest.mark.spec("GRADSCALER-016")
@pytest.mark.parametrize("positional", [False, True], ids=["keyword", "positional"])
@pytest.mark.parametrize("explicit_unscale", [False, True])
@pytest.mark.parametrize("loss_scale", ["dynamic", 64.0])
def test_step_unscales_once_forwards_arguments_and_returns_the_result(engine, explicit_unscale, loss_scale, positional):
    params = [engine.nn.Parameter(np.zeros(s, dtype=np.float32)) for s in SHAPES]
    optimizer = engine.optim.SGD(params, lr=0.125)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, init_scale=64.0)
    set_scaled(params, unit_grads(0.5), 64.0)
    if explicit_unscale:
        scaler.unscale_(optimizer)
    closure, calls = recording_closure()
    # *args and **kwargs are both forwarded, and the result returned
    assert step_with_closure(scaler.step, optimizer, closure, positional) == "the closure's loss"
    assert calls == [1]
    for param in params:  # gradients divided exactly once: SGD applied lr * 0.5
        np.testing.assert_array_equal(param.data, np.float32(-0.125 * 0.5))
    scaler.update()


@pytest.mark.spec("GRADSCALER-016")
@pytest.mark.parametrize("loss_scale", ["dynamic", 2.0**6])
def test_step_after_a_scaled_backward_unscales_by_itself(engine, loss_scale):
    x = np.linspace(-1.0, 1.0, 20, dtype=np.float32).reshape(4, 5)
    y = np.array([0, 2, 1, 0])
    engine.nn.manual_seed(0)
    model = engine.nn.Linear(5, 3)
    engine.nn.cross_entropy(model(x), y).backward()
    plain = [p.grad.copy() for p in model.parameters()]
    before = [p.data.copy() for p in model.parameters()]
    model.zero_grad()
    optimizer = engine.optim.SGD(model.parameters(), lr=1.0)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, init_scale=2.0**6)
    scaler.scale(engine.nn.cross_entropy(model(x), y)).backward()
    scaler.step(optimizer)  # no unscale_ first: step does it
    scaler.update()
    for old, param, grad in zip(before, model.parameters(), plain, strict=True):
        np.testing.assert_allclose(old - param.data, grad, rtol=2e-3, atol=1e-5)


@pytest.mark.spec("GRADSCALER-039")
@pytest.mark.parametrize("positional", [False, True], ids=["keyword", "positional"])
def test_step_if_finite_after_the_finiteness_check(engine, positional):
    params = [engine.nn.Parameter(np.zeros(s, dtype=np.float32)) for s in SHAPES]
    optimizer = engine.optim.SGD(params, lr=0.125)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=4.0)
    set_scaled(params, unit_grads(), 4.0)
    scaler.unscale_(optimizer)
    assert scaler.clip_gradients_and_return_isfinite([optimizer]) is True
    closure, calls = recording_closure()
    assert step_with_closure(scaler.step_if_finite, optimizer, closure, positional) == "the closure's loss"
    assert calls == [1]
    for param in params:
        np.testing.assert_array_equal(param.data, np.float32(-0.125 * 0.25))
    scaler.update()
    set_scaled(params, overflow_grads(), scaler.get_scale())
    scaler.unscale_(optimizer)
    assert scaler.clip_gradients_and_return_isfinite([optimizer]) is False
    before = snapshot(params, optimizer)
    scaler.step_if_finite(optimizer)
    scaler.update()
    assert bitwise_equal(snapshot(params, optimizer), before)


@pytest.mark.spec("GRADSCALER-018")
@pytest.mark.parametrize("loss_scale", [None, 4.0])
@pytest.mark.parametrize("overflow", [False, True])
def test_clip_gradients_and_return_isfinite_with_a_static_scale(engine, loss_scale, overflow):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale=loss_scale, max_gradient_norm=0.5)  # no GCC without DLS
    set_scaled(params, overflow_grads() if overflow else unit_grads(), scaler.get_scale())
    scaler.unscale_(optimizer)
    unscaled = [np.copy(p.grad) for p in params]
    assert scaler.clip_gradients_and_return_isfinite([optimizer]) is (not overflow)
    assert all(bitwise_equal(p.grad, grad) for p, grad in zip(params, unscaled, strict=True))


@pytest.mark.spec("GRADSCALER-018")
@given(data=st.data(), overflow=st.booleans(), limit=st.sampled_from([None, 0.5, 2.0]))
def test_clip_gradients_and_return_isfinite(engine, data, overflow, limit):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=1.0, max_gradient_norm=limit)
    make = gradients_with_nonfinite if overflow else finite_gradients
    grads = [data.draw(make(SHAPES[0]))] + [data.draw(finite_gradients(SHAPES[1]))]
    for param, grad in zip(params, grads, strict=True):
        param.grad = grad
    scaler.unscale_(optimizer)  # a scale of 1 divides by 1: the gradients stay as drawn
    assert scaler.clip_gradients_and_return_isfinite([optimizer]) is (not overflow)
    if not overflow:
        norm = math.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in grads))
        factor = 1.0 if limit is None else min(1.0, limit / (norm + 1e-6))
        for param, grad in zip(params, grads, strict=True):
            np.testing.assert_allclose(param.grad, grad * factor, rtol=1e-5, atol=1e-30)


def applied_update(engine, grads, scale, lr=1.0, **scaler_options):  # noqa: ANN001, ANN003, ANN201
    """The update SGD(lr) applied in one scaler iteration, per parameter: lr times the gradient it saw."""
    params, optimizer = make_setup(engine, lr=lr, momentum=0.0)
    scaler = engine.amp.GradScaler(**scaler_options)
    before = [p.data.astype(np.float64) for p in params]
    set_scaled(params, grads, scale)
    scaler.step(optimizer)
    scaler.update()
    return [b - p.data.astype(np.float64) for b, p in zip(before, params, strict=True)]


@pytest.mark.spec("GRADSCALER-019")
@given(data=st.data(), limit=st.sampled_from([0.25, 1.0, 100.0]), scale=loss_scales(-2, 12))
def test_dls_with_gcc_clips_by_global_norm(engine, data, limit, scale):
    grads = [data.draw(finite_gradients(s, max_magnitude=1e3)) for s in SHAPES]
    seen = applied_update(engine, grads, scale, loss_scale="dynamic", init_scale=scale, max_gradient_norm=limit)
    norm = math.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in grads))
    factor = min(1.0, limit / (norm + 1e-6))
    for applied, grad in zip(seen, grads, strict=True):
        np.testing.assert_allclose(applied, grad * factor, rtol=1e-4, atol=1e-6)


@pytest.mark.spec("GRADSCALER-019")
@pytest.mark.parametrize("limit", [0.25, 1.0, 100.0])
def test_dls_with_gcc_clips_known_gradients(engine, limit):
    grads = [np.full(SHAPES[0], 0.5, dtype=np.float32), np.array([1.0, -2.0, 0.0, 2.0], dtype=np.float32)]
    seen = applied_update(engine, grads, 16.0, loss_scale="dynamic", init_scale=16.0, max_gradient_norm=limit)
    factor = min(1.0, limit / (math.sqrt(6 * 0.25 + 1 + 4 + 4) + 1e-6))  # the global norm is sqrt(10.5)
    for applied, grad in zip(seen, grads, strict=True):
        np.testing.assert_allclose(applied, grad * factor, rtol=1e-6, atol=1e-7)


@pytest.mark.spec("GRADSCALER-019")
def test_gcc_adds_its_epsilon_to_a_small_norm(engine):
    grads = [np.full(SHAPES[0], 0.5e-5, dtype=np.float32), np.array([1e-5, -2e-5, 0.0, 2e-5], dtype=np.float32)]
    lr = 1e4  # so that the clipped update stands well above the float32 spacing of the weights
    seen = applied_update(engine, grads, 16.0, lr=lr, loss_scale="dynamic", init_scale=16.0, max_gradient_norm=1e-6)
    norm = math.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in grads))  # about 3.2e-5
    factor = 1e-6 / (norm + 1e-6)  # the 1e-6 moves this factor by 3 %
    for applied, grad in zip(seen, grads, strict=True):
        np.testing.assert_allclose(applied / lr, grad * factor, rtol=1e-3, atol=1e-12)


@pytest.mark.spec("GRADSCALER-019")
def test_max_gradient_norm_has_no_effect_without_dls(engine):
    params, optimizer, scaler = scaled_setup(engine, loss_scale=8.0, max_gradient_norm=0.01)
    scaler.unscale_(optimizer)
    assert all(bitwise_equal(p.grad, g) for p, g in zip(params, unit_grads(), strict=True))


# --- the update rule -----------------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-020")
def test_overflow_halves_the_scale_and_resets_counters(engine):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**10, steps_per_increase=5)
    for _ in range(3):
        iteration(scaler, params, optimizer)
    assert scaler.state_dict()["steps_since_rescale"] == 3
    iteration(scaler, params, optimizer, finite=False)
    assert scaler.state_dict() == dynamic_state(2.0**9, steps=0, overflows=0, skipped=1)


@pytest.mark.spec("GRADSCALER-020")
def test_overflow_tolerance_is_a_strict_fraction(engine):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(
        loss_scale="dynamic", init_scale=2.0**8, steps_per_increase=100, overflow_tolerance=0.5
    )
    iteration(scaler, params, optimizer)
    iteration(scaler, params, optimizer, finite=False)  # 1/2 is not > 0.5
    assert scaler.get_scale() == 2.0**8
    assert scaler.state_dict()["overflows_since_rescale"] == 1
    iteration(scaler, params, optimizer, finite=False)  # 2/3 > 0.5
    assert scaler.get_scale() == 2.0**7
    assert scaler.state_dict()["steps_since_rescale"] == 0


@pytest.mark.spec("GRADSCALER-021")
@pytest.mark.parametrize("steps_per_increase", [0, 1, 2, 5, 12])
def test_scale_doubles_after_steps_per_increase_plus_one_clean_updates(engine, steps_per_increase):
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=1.0, steps_per_increase=steps_per_increase)
    for done in range(1, steps_per_increase + 1):
        iteration(scaler, params, optimizer)
        assert scaler.get_scale() == 1.0 and scaler.state_dict()["steps_since_rescale"] == done
    iteration(scaler, params, optimizer)
    assert scaler.get_scale() == 2.0 and scaler.state_dict()["steps_since_rescale"] == 0


@pytest.mark.spec("GRADSCALER-020", "GRADSCALER-021", "GRADSCALER-022", "GRADSCALER-043")
@given(config=dynamic_grad_scaler_configs(min_steps_per_increase=1), finite=st.lists(st.booleans(), max_size=25))
def test_scale_trajectory_follows_the_update_rule(engine, config, finite):
    config.pop("max_gradient_norm", None)
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(**config)
    model = LossScaleModel(
        dynamic=True,
        scale=config["init_scale"],
        min_scale=config["min_loss_scale"],
        max_scale=config["max_loss_scale"],
        steps_per_increase=config["steps_per_increase"],
        overflow_tolerance=config["overflow_tolerance"],
    )
    for clean in finite:
        model.step(clean)
        model.update(clean)
        try:
            iteration(scaler, params, optimizer, finite=clean)
        except NonRecoverableNaNError as exc:
            raise RuleViolation("GRADSCALER-043", f"update() raised at the minimum scale: {exc}") from exc
        check_scaler_state(scaler, model)


@pytest.mark.spec("GRADSCALER-022")
def test_scale_is_clamped_into_its_range(engine):
    params, optimizer = make_setup(engine)
    high = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**20, max_loss_scale=2.0**6, steps_per_increase=0)
    iteration(high, params, optimizer)
    assert high.get_scale() == 2.0**6
    low = engine.amp.GradScaler(loss_scale="dynamic", init_scale=3.0, min_loss_scale=2.0, max_loss_scale=8.0)
    iteration(low, params, optimizer, finite=False)
    assert low.get_scale() == 2.0


# --- checkpointing --------------------------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-023")
@given(
    config=dynamic_grad_scaler_configs(),
    first=st.lists(st.booleans(), max_size=8),
    then=st.lists(st.booleans(), max_size=8),
)
def test_state_dict_round_trip_continues_identically(engine, config, first, then):
    config["min_loss_scale"] = min(config["min_loss_scale"], 2.0**-10)  # keep clear of NonRecoverableNaN
    config["init_scale"] = config["max_loss_scale"] = max(config["max_loss_scale"], 2.0**12)
    params, optimizer = make_setup(engine)
    original = engine.amp.GradScaler(**config)
    for clean in first[:6]:
        iteration(original, params, optimizer, finite=clean)
    saved = original.state_dict()
    restored = engine.amp.GradScaler(**config)
    restored.load_state_dict(copy.deepcopy(saved))
    assert restored.state_dict() == saved and restored.get_scale() == original.get_scale()
    for clean in then[:6]:
        iteration(original, params, optimizer, finite=clean)
        iteration(restored, params, optimizer, finite=clean)
        assert restored.state_dict() == original.state_dict()


@pytest.mark.spec("GRADSCALER-023")
def test_dynamic_state_dict_round_trip_of_a_known_run(engine):
    config = {"loss_scale": "dynamic", "init_scale": 2.0**8, "steps_per_increase": 3, "overflow_tolerance": 0.5}
    params, optimizer = make_setup(engine)
    original = engine.amp.GradScaler(**config)
    for clean in (True, False, True):
        iteration(original, params, optimizer, finite=clean)
    saved = original.state_dict()
    assert saved == dynamic_state(2.0**8, steps=3, overflows=1, skipped=1)
    restored = engine.amp.GradScaler(**config)
    restored.load_state_dict(copy.deepcopy(saved))
    assert restored.state_dict() == saved and restored.get_scale() == 2.0**8
    for clean in (True, False, False, True):  # growth, then two back-offs: the counters carried over
        iteration(original, params, optimizer, finite=clean)
        iteration(restored, params, optimizer, finite=clean)
        assert restored.state_dict() == original.state_dict()
    assert restored.state_dict() == dynamic_state(2.0**7, steps=1, overflows=0, skipped=3)


@pytest.mark.spec("GRADSCALER-023")
def test_static_state_dict_round_trip(engine):
    original = engine.amp.GradScaler(loss_scale=128.0)
    assert original.state_dict() == {"loss_scale": 128.0}
    restored = engine.amp.GradScaler(loss_scale=128.0)
    restored.load_state_dict({"loss_scale": 256.0})
    assert restored.get_scale() == 256.0


@pytest.mark.spec("GRADSCALER-024")
@pytest.mark.parametrize(
    ("state", "problem"),
    [
        # each refusal names the problem: the keys that are missing or unexpected, or the bad value's key
        ({"loss_scale": 8.0}, r"\bsteps_since_rescale\b.*\boverflows_since_rescale\b"),
        ({"loss_scale": 8.0, "steps_since_rescale": 1}, r"\boverflows_since_rescale\b"),
        ({"loss_scale": 8.0, "steps_since_rescale": 1, "overflows_since_rescale": 0, "extra": 1}, r"\bextra\b"),
        ({"loss_scale": 0.0, "steps_since_rescale": 1, "overflows_since_rescale": 0}, r"\bloss_scale\b"),
        ({"loss_scale": -8.0, "steps_since_rescale": 1, "overflows_since_rescale": 0}, r"\bloss_scale\b"),
        ({"loss_scale": 8.0, "steps_since_rescale": -1, "overflows_since_rescale": 0}, r"\bsteps_since_rescale\b"),
        ({"loss_scale": 8.0, "steps_since_rescale": 1, "overflows_since_rescale": -1}, r"\boverflows_since_rescale\b"),
        ({"loss_scale": 8.0, "steps_since_rescale": 1, "overflows_since_rescale": 2}, r"\boverflows_since_rescale\b"),
        (
            {"loss_scale": 8.0, "steps_since_rescale": 1, "overflows_since_rescale": 0, "num_skipped_steps": -2},
            r"\bnum_skipped_steps\b",
        ),
        ([("loss_scale", 8.0)], r"\bmapping\b.*\blist\b"),
    ],
    # ids without backslashes: a node id holding one cannot be selected again from the command line
    ids=lambda value: value.replace(r"\b", "") if isinstance(value, str) else repr(value),
)
def test_mismatched_state_is_refused(engine, state, problem):
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=32.0)
    before = scaler.state_dict()
    with pytest.raises(GradScalerConfigError, match=problem):
        scaler.load_state_dict(state)
    assert scaler.state_dict() == before


@pytest.mark.spec("GRADSCALER-024")
def test_dynamic_state_into_static_scaler_is_refused_and_old_states_load(engine):
    older_state = {"loss_scale": 8.0, "steps_since_rescale": 3, "overflows_since_rescale": 1}
    static = engine.amp.GradScaler(loss_scale=4.0)
    with pytest.raises(GradScalerConfigError, match=r"\bstatic\b.*\bsteps_since_rescale\b"):
        static.load_state_dict(older_state)  # the refusal names the scaler's mode and the keys that differ
    assert static.state_dict() == {"loss_scale": 4.0}
    with pytest.raises(GradScalerConfigError, match=r"\bdynamic\b.*\bsteps_since_rescale\b"):
        engine.amp.GradScaler(loss_scale="dynamic").load_state_dict({"loss_scale": 8.0})
    scaler = engine.amp.GradScaler(loss_scale="dynamic")
    scaler.load_state_dict(older_state)  # an older release's state, without num_skipped_steps
    assert scaler.state_dict() == dynamic_state(8.0, steps=3, overflows=1, skipped=0)


# --- overflow at the minimum scale ----------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-043")
@pytest.mark.parametrize("min_exponent", [-14, -3, 0, 4])
@pytest.mark.parametrize("tolerance", [0.0, 0.5])
def test_update_at_the_minimum_scale_clamps_and_never_raises(engine, min_exponent, tolerance):
    minimum = 2.0**min_exponent
    params, optimizer = make_setup(engine)
    scaler = engine.amp.GradScaler(
        loss_scale="dynamic", init_scale=2 * minimum, min_loss_scale=minimum, overflow_tolerance=tolerance
    )
    if tolerance:
        iteration(scaler, params, optimizer)  # 1 clean step: a single overflow is then within 0.5
        iteration(scaler, params, optimizer, finite=False)
        assert scaler.get_scale() == 2 * minimum
    iteration(scaler, params, optimizer, finite=False)  # halved down to the minimum
    assert scaler.get_scale() == minimum
    iteration(scaler, params, optimizer)  # a clean step at the minimum
    skipped = scaler.state_dict()["num_skipped_steps"]
    before = snapshot(params, optimizer)
    for overflows in range(1, 4):  # the gradients stay non-finite: each step is skipped, none raises
        iteration(scaler, params, optimizer, finite=False)
        assert scaler.get_scale() == minimum
        assert scaler.state_dict()["num_skipped_steps"] == skipped + overflows
    assert bitwise_equal(snapshot(params, optimizer), before)


# --- several optimizers, update() protocol ---------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-026")
def test_one_update_after_several_optimizers(engine):
    first_params, first = make_setup(engine)
    second_params, second = make_setup(engine)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=16.0)
    set_scaled(first_params, unit_grads(), 16.0)
    set_scaled(second_params, overflow_grads(), 16.0)
    second_before = snapshot(second_params, second)
    scaler.step(first)
    assert scaler.step(second) is None
    assert first.global_step == 1 and bitwise_equal(snapshot(second_params, second), second_before)
    scaler.update()
    assert scaler.state_dict() == dynamic_state(8.0, steps=0, overflows=0, skipped=1)


@pytest.mark.spec("GRADSCALER-026")
def test_update_before_any_step_is_refused_in_dynamic_mode(engine):
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=16.0)
    with pytest.raises(GradScalerUsageError):
        scaler.update()
    assert scaler.state_dict()["steps_since_rescale"] == 0


# --- the documented loop ------------------------------------------------------------------------------


def classification_data(rng: np.random.Generator, samples: int, features: int, classes: int):  # noqa: ANN201
    """Gaussian blobs: one centre per class, well separated."""
    centres = rng.normal(0.0, 2.0, size=(classes, features)).astype(np.float32)
    labels = rng.integers(0, classes, size=samples)
    inputs = centres[labels] + rng.normal(0.0, 0.5, size=(samples, features)).astype(np.float32)
    return inputs.astype(np.float32), labels


@pytest.mark.spec("GRADSCALER-027")
def test_documented_loop_with_unscale_and_clipping(engine):
    model = seeded_fc_mnist(engine, seed=1, hidden=16, inputs=8, classes=3)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**12)
    x, y = classification_data(np.random.default_rng(0), 64, 8, 3)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = engine.nn.cross_entropy(model(x), y)
        losses.append(float(loss.value))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = math.sqrt(sum(float(np.sum(np.square(p.grad, dtype=np.float64))) for p in model.parameters()))
        for p in model.parameters():  # global gradient clipping to norm 1.0
            p.grad = p.grad * np.float32(min(1.0, 1.0 / (norm + 1e-6)))
        scaler.step(optimizer)
        scaler.update()
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.spec("GRADSCALER-027")
@given(exponent=st.integers(0, 12))
def test_assigned_gradients_are_treated_as_scaled(engine, exponent):
    scale = 2.0**exponent
    x, y = classification_data(np.random.default_rng(2), 16, 6, 3)
    results = []
    for assign in (False, True):
        model = seeded_fc_mnist(engine, seed=3)
        optimizer = engine.optim.SGD(model.parameters(), lr=0.05)
        scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=scale)
        scaled_loss = scaler.scale(engine.nn.cross_entropy(model(x), y))
        scaled_loss.backward()
        if assign:
            grads = [p.grad.copy() for p in model.parameters()]
            model.zero_grad()
            for p, g in zip(model.parameters(), grads, strict=True):
                p.grad = g
        scaler.unscale_(optimizer)  # the documented loop unscales before stepping
        scaler.step(optimizer)
        scaler.update()
        results.append([p.data.copy() for p in model.parameters()])
    assert bitwise_equal(results[0], results[1])


@pytest.mark.spec("GRADSCALER-028")
def test_fc_mnist_like_model_trains_under_dls_with_injected_overflows(engine):
    model = seeded_fc_mnist(engine, seed=7, hidden=32, inputs=20, classes=4)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**15, steps_per_increase=10)
    rng = np.random.default_rng(11)
    x, y = classification_data(rng, 256, 20, 4)
    overflow_at = {5, 6, 17, 30, 31, 32, 44}
    losses, scales = [], []
    for it in range(60):
        batch = rng.choice(256, size=32, replace=False)
        optimizer.zero_grad()
        loss = engine.nn.cross_entropy(model(x[batch]), y[batch])
        losses.append(float(loss.value))
        scaler.scale(loss).backward()
        if it in overflow_at:
            model.parameters()[0].grad[0, 0] = np.float32("inf") if it % 2 else np.float32("nan")
        before = optimizer.global_step
        scaler.unscale_(optimizer)  # the documented loop unscales before stepping
        scaler.step(optimizer)
        scales.append(scaler.get_scale())
        scaler.update()
        assert (optimizer.global_step == before) == (it in overflow_at)
    assert scaler.state_dict()["num_skipped_steps"] == len(overflow_at)
    assert optimizer.global_step == 60 - len(overflow_at)
    assert scaler.get_scale() < 2.0**15  # backed off at least once and stayed within range
    assert all(np.all(np.isfinite(p.data)) for p in model.parameters())
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:5])


# --- optimizer_step ------------------------------------------------------------------------------------


def _manual_optimizer_step(engine, model, optimizer, scaler, loss, norm_limit, value_limit):  # noqa: ANN001
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    grads = [p.grad for p in model.parameters()]
    if norm_limit is not None:
        norm = math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads))
        for p in model.parameters():
            p.grad = p.grad * np.float32(min(1.0, norm_limit / (norm + 1e-6)))
    elif value_limit is not None:
        for p in model.parameters():
            p.grad = np.clip(p.grad, -value_limit, value_limit)
    scaler.step(optimizer)
    scaler.update()


@pytest.mark.spec("GRADSCALER-029")
@pytest.mark.parametrize("norm_limit, value_limit", [(None, None), (0.05, None), (None, 0.002), (100.0, None)])
def test_optimizer_step_matches_the_manual_sequence(engine, norm_limit, value_limit):
    x, y = classification_data(np.random.default_rng(5), 24, 6, 3)
    trained = []
    for use_helper in (True, False):
        model = seeded_fc_mnist(engine, seed=4)
        optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
        scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**8, steps_per_increase=1)
        for _ in range(4):
            loss = engine.nn.cross_entropy(model(x), y)
            if use_helper:
                engine.amp.optimizer_step(
                    loss, optimizer, scaler, max_gradient_norm=norm_limit, max_gradient_value=value_limit
                )
            else:
                _manual_optimizer_step(engine, model, optimizer, scaler, loss, norm_limit, value_limit)
        trained.append(([p.data.copy() for p in model.parameters()], scaler.state_dict(), optimizer.global_step))
    helper, manual = trained
    assert helper[1] == manual[1] and helper[2] == manual[2] == 4
    for a, b in zip(helper[0], manual[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    if norm_limit is None and value_limit is None:
        assert all(bitwise_equal(a, b) for a, b in zip(helper[0], manual[0], strict=True))


@pytest.mark.spec("GRADSCALER-029")
@pytest.mark.parametrize("limit_over_norm", [0.25, 1.0, 1.6, 100.0])
def test_optimizer_step_clips_by_the_documented_factor(engine, limit_over_norm):
    """Zero weights and lr 1: the step's update is exactly the clipped gradient, g * min(1, c / (norm + 1e-6))."""
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
    target = np.full((4, 2), 2.0**-7, dtype=np.float32)  # a gradient norm near 0.01, where 1e-6 shows

    def zeroed_setup():  # noqa: ANN202
        model = engine.nn.Linear(3, 2)
        for p in model.parameters():
            p.data[...] = 0.0
        return model, engine.optim.SGD(model.parameters(), lr=1.0)

    model, optimizer = zeroed_setup()
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**8)
    scaler.scale(engine.nn.mse_loss(model(x), target)).backward()
    scaler.unscale_(optimizer)
    gradients = [p.grad.astype(np.float64) for p in model.parameters()]
    scaler.step(optimizer)  # finish the iteration before the next one
    scaler.update()
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in gradients))
    assert 1e-3 < norm < 0.1
    limit = limit_over_norm * norm

    model, optimizer = zeroed_setup()
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**8)
    engine.amp.optimizer_step(engine.nn.mse_loss(model(x), target), optimizer, scaler, max_gradient_norm=limit)
    factor = min(1.0, limit / (norm + 1e-6))
    for p, g in zip(model.parameters(), gradients, strict=True):
        np.testing.assert_allclose(-p.data, g * factor, rtol=1e-5, atol=0)


@pytest.mark.spec("GRADSCALER-029")
def test_optimizer_step_refuses_two_clipping_limits(engine):
    engine.nn.manual_seed(0)
    model = engine.nn.Linear(3, 2)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    scaler = engine.amp.GradScaler(loss_scale="dynamic")
    loss = engine.nn.mse_loss(model(np.ones((2, 3), dtype=np.float32)), np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(GradScalerConfigError):
        engine.amp.optimizer_step(loss, optimizer, scaler, max_gradient_norm=1.0, max_gradient_value=1.0)
    assert optimizer.global_step == 0


@pytest.mark.spec("GRADSCALER-029")
def test_optimizer_step_skips_on_overflow(engine):
    engine.nn.manual_seed(0)
    model = engine.nn.Linear(3, 2)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    scaler = engine.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**14)
    engine.precision.set_compute_precision("mixed")  # the overflow needs 16-bit arithmetic
    x = np.full((2, 3), 60000.0, dtype=np.float32)  # float16 overflow in the scaled backward pass
    before = [p.data.copy() for p in model.parameters()]
    loss = engine.nn.mse_loss(model(x), np.zeros((2, 2), dtype=np.float32))
    with np.errstate(over="ignore", invalid="ignore"):
        assert engine.amp.optimizer_step(loss, optimizer, scaler) is None
    assert optimizer.global_step == 0 and scaler.get_scale() == 2.0**13
    assert bitwise_equal([p.data for p in model.parameters()], before)


# --- the half dtype and the defaults -----------------------------------------------------------------------


@pytest.mark.spec("GRADSCALER-030")
def test_set_half_dtype_changes_the_default_scale(engine):
    engine.amp.set_half_dtype("cbfloat16")
    assert engine.amp.GradScaler(loss_scale="dynamic").get_scale() == 2.0**31
    engine.amp.set_half_dtype("bfloat16")
    assert engine.amp.GradScaler(loss_scale="dynamic").get_scale() == 2.0**15
    engine.amp.set_half_dtype("float16")
    assert engine.amp.GradScaler(loss_scale="dynamic").get_scale() == 2.0**15


# --- unscaling on the iterations whose update() rescales ----------------------------------------------

# A run with steps_per_increase=1 (the scale doubles on every second clean update) and one overflow
# (it halves): (finite, the scale the iteration starts at). update() doubles the scale after
# iterations 1, 3 and 6 and halves it after iteration 4.
RESCALING_RUN = (
    (True, 16.0),
    (True, 16.0),
    (True, 32.0),
    (True, 32.0),
    (False, 64.0),
    (True, 32.0),
    (True, 32.0),
    (True, 64.0),
)
TRUE_GRADS = (  # exact in float32 at any power-of-two scale; global norm sqrt(17.207...) = 4.148
    np.array([[0.5, -0.25], [0.125, 1.0], [-2.0, 0.75]], dtype=np.float32),
    np.array([0.25, -1.5, 3.0, 0.0625], dtype=np.float32),
)
# Above the true norm: nothing is clipped at the right scale, but gradients unscaled by half the
# scale (twice the true ones, norm 8.3) would be, and by twice the scale would show half the update.
GRADIENT_LIMIT = 8.0


@pytest.mark.spec("GRADSCALER-046")
@pytest.mark.parametrize("max_gradient_norm", [None, GRADIENT_LIMIT])
@pytest.mark.parametrize("path", ["unscale_", "step", "clip_gradients_and_return_isfinite", "step_if_finite"])
def test_every_unscaling_path_divides_by_the_scale_of_its_iteration(engine, path, max_gradient_norm):
    params = [engine.nn.Parameter(np.zeros(grad.shape, dtype=np.float32)) for grad in TRUE_GRADS]
    optimizer = engine.optim.SGD(params, lr=1.0)
    scaler = engine.amp.GradScaler(
        loss_scale="dynamic",
        init_scale=16.0,
        steps_per_increase=1,
        max_loss_scale=2.0**10,
        max_gradient_norm=max_gradient_norm,
    )
    for number, (finite, scale) in enumerate(RESCALING_RUN):
        where = f"iteration {number} ({'finite' if finite else 'overflow'}, scale {scale:g}), {path}"
        assert scaler.get_scale() == scale, f"{where}: the update rule (GRADSCALER-020, 021) gave another scale"
        grads = [grad.copy() for grad in TRUE_GRADS]
        if not finite:
            grads[1][2] = INF
        set_scaled(params, grads, scale)
        before = [p.data.copy() for p in params]
        if path == "step":
            scaler.step(optimizer)
        else:
            scaler.unscale_(optimizer)
            if path == "unscale_":
                for param, grad in zip(params, grads, strict=True):
                    assert bitwise_equal(param.grad, grad), f"{where}: unscale_ did not give back the true gradients"
            if path in ("clip_gradients_and_return_isfinite", "step_if_finite"):
                assert scaler.clip_gradients_and_return_isfinite([optimizer]) is finite, where
                if finite:  # the limit is above the true norm: nothing clipped
                    for param, grad in zip(params, grads, strict=True):
                        np.testing.assert_array_equal(param.grad, grad, err_msg=where)
            if path == "step_if_finite":
                scaler.step_if_finite(optimizer)
            else:
                scaler.step(optimizer)
        for old, param, grad in zip(before, params, TRUE_GRADS, strict=True):
            applied = old.astype(np.float64) - param.data.astype(np.float64)  # SGD, lr 1: the gradient it saw
            np.testing.assert_allclose(applied, grad if finite else 0.0, rtol=1e-6, atol=1e-6, err_msg=where)
        scaler.update()
    assert scaler.get_scale() == 64.0
