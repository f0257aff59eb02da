"""Conformance checks of the optimizers and the learning rate as a tensor (specs/optimizer.yaml).

Each optimizer is compared with a short float64 NumPy reference of its update formula written here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import InvalidInputError, LRSchedulerError


def decaying(step: int) -> np.float32:
    """A schedule of the global step that differs at every step."""
    return np.float32(0.1 / (1.0 + step))


def make_params(engine, rng: np.random.Generator, shapes=((3, 4), (5,))):
    return [engine.nn.Parameter(rng.standard_normal(shape)) for shape in shapes]


def give_grads(params, rng: np.random.Generator) -> list[np.ndarray]:
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    for p, g in zip(params, grads, strict=True):
        p.grad = g
    return grads


def reference_sgd(w, grads, lrs, momentum, weight_decay, nesterov):
    w = w.astype(np.float64)
    buffer = None
    for g, lr in zip(grads, lrs, strict=True):
        g = g + weight_decay * w
        if momentum:
            buffer = g if buffer is None else momentum * buffer + g
            g = g + momentum * buffer if nesterov else buffer
        w = w - lr * g
    return w


def reference_adam(w, grads, lrs, betas, eps, weight_decay, decoupled):
    w = w.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, (g, lr) in enumerate(zip(grads, lrs, strict=True), start=1):
        if not decoupled:
            g = g + weight_decay * w
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        update = np.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t) * m / (np.sqrt(v) + eps)
        if decoupled:
            update = update + weight_decay * w
        w = w - lr * update
    return w


def run(engine, optimizer, params, steps, rng):
    """Apply ``steps`` updates with fresh random gradients; return the gradients per parameter."""
    history = [[] for _ in params]
    for _ in range(steps):
        for record, g in zip(history, give_grads(params, rng), strict=True):
            record.append(g.astype(np.float64))
        optimizer.step()
    return history


def step_in_lockstep(optimizer, twin, params, clones, rng, steps: int) -> None:
    """Give ``params`` and their ``clones`` the same fresh random gradients and step both optimizers,
    ``steps`` times; then the two sets of weights must be bit-identical."""
    for _ in range(steps):
        for clone, g in zip(clones, give_grads(params, rng), strict=True):
            clone.grad = g.copy()
        optimizer.step()
        twin.step()
    for p, c in zip(params, clones, strict=True):
        assert np.array_equal(p.data.view(np.uint32), c.data.view(np.uint32))


@pytest.mark.spec("OPTIM-001")
def test_scalar_lr_assignment_refused_on_cs_accepted_on_cpu(engine):
    rng = np.random.default_rng(1)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=0.1)
    with pytest.raises(LRSchedulerError, match="global step") as raised:
        optimizer.param_groups[0]["lr"] = 0.2
    assert "schedule" in str(raised.value)
    assert optimizer.current_lrs() == [np.float32(0.1)]

    engine.set_target("cpu")
    optimizer.param_groups[0]["lr"] = 0.2
    assert optimizer.current_lrs() == [np.float32(0.2)]
    before = params[0].data.copy()
    grads = give_grads(params, rng)
    optimizer.step()
    assert np.array_equal(params[0].data, before - np.float32(0.2) * grads[0])


@pytest.mark.spec("OPTIM-002")
@given(steps=st.integers(1, 8), seed=st.integers(0, 2**16))
@settings(max_examples=15)
def test_update_k_uses_the_schedule_at_k(engine, steps, seed):
    rng = np.random.default_rng(seed)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=decaying)
    for k in range(steps):
        assert optimizer.global_step == k
        before = [p.data.copy() for p in params]
        grads = give_grads(params, rng)
        optimizer.step()
        for p, w, g in zip(params, before, grads, strict=True):
            assert np.array_equal(p.data, w - decaying(k) * g)
    assert optimizer.global_step == steps


@pytest.mark.spec("OPTIM-002", "OPTIM-005")
def test_polynomial_schedule_drives_the_updates(engine):
    rng = np.random.default_rng(2)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    schedule = engine.optim.lr_scheduler.PolynomialLR(
        initial_learning_rate=0.05, end_learning_rate=0.001, total_iters=4
    )
    optimizer = engine.optim.Adam(params, lr=schedule)
    history = run(engine, optimizer, params, 6, rng)
    lrs = [float(schedule(k)) for k in range(6)]
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_adam(w0, grads, lrs, (0.9, 0.999), 1e-6, 0.0, decoupled=False)
        np.testing.assert_allclose(p.data, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.spec("OPTIM-003")
def test_lr_is_evaluated_from_the_global_step(engine):
    rng = np.random.default_rng(3)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=decaying)
    weights = [p.data.copy() for p in params]
    for step in (0, 1, 7, 1000):
        lrs = optimizer.lr_at(step)
        assert lrs == [decaying(step)] and isinstance(lrs[0], np.float32)
    assert optimizer.global_step == 0
    assert all(np.array_equal(p.data, w) for p, w in zip(params, weights, strict=True))
    run(engine, optimizer, params, 3, rng)
    assert optimizer.current_lrs() == optimizer.lr_at(3) == [decaying(3)]


@pytest.mark.spec("OPTIM-004")
def test_number_is_a_constant_schedule(engine):
    params = make_params(engine, np.random.default_rng(4))
    optimizer = engine.optim.Adam(params, lr=0.05)
    for step in (0, 1, 10, 10**6):
        assert optimizer.lr_at(step) == [np.float32(0.05)]


@pytest.mark.spec("OPTIM-004", "OPTIM-002")
@pytest.mark.parametrize("lr", [0.0, lambda step: np.float32(0.0 if step == 1 else 0.1)], ids=["zero", "zero_at_1"])
def test_a_learning_rate_of_zero_is_used_like_any_other(engine, lr):
    rng = np.random.default_rng(15)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=lr)
    give_grads(params, rng)
    optimizer.step()
    assert optimizer.lr_at(1) == [np.float32(0.0)]
    before = [p.data.copy() for p in params]
    give_grads(params, rng)
    optimizer.step()  # update 1 with lr 0 leaves the weights as they were
    assert all(np.array_equal(p.data, w) for p, w in zip(params, before, strict=True))
    assert optimizer.global_step == 2


@pytest.mark.spec("OPTIM-005")
def test_schedule_given_once_needs_no_per_step_action(engine):
    rng = np.random.default_rng(5)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.SGD(params, lr=decaying, momentum=0.9)
    history = run(engine, optimizer, params, 10, rng)
    lrs = [float(decaying(k)) for k in range(10)]
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_sgd(w0, grads, lrs, 0.9, 0.0, False)
        np.testing.assert_allclose(p.data, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.spec("OPTIM-006")
@given(
    momentum=st.sampled_from([0.0, 0.5, 0.9]),
    weight_decay=st.sampled_from([0.0, 0.01, 0.3]),
    nesterov=st.booleans(),
    steps=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=25)
def test_sgd_matches_the_reference(engine, momentum, weight_decay, nesterov, steps, seed):
    nesterov = nesterov and momentum > 0
    rng = np.random.default_rng(seed)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.SGD(params, lr=0.03, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    history = run(engine, optimizer, params, steps, rng)
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_sgd(w0, grads, [0.03] * steps, momentum, weight_decay, nesterov)
        np.testing.assert_allclose(p.data, expected, rtol=1e-5, atol=1e-6)
        assert p.data.dtype == np.float32


@pytest.mark.spec("OPTIM-006")
@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_with_momentum_one_matches_the_reference(engine, nesterov):
    rng = np.random.default_rng(16)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.SGD(params, lr=0.03, momentum=1.0, nesterov=nesterov)
    history = run(engine, optimizer, params, 4, rng)
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_sgd(w0, grads, [0.03] * 4, 1.0, 0.0, nesterov)
        np.testing.assert_allclose(p.data, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.spec("OPTIM-013")
@given(
    betas=st.sampled_from([(0.9, 0.999), (0.5, 0.9), (0.0, 0.0)]),
    weight_decay=st.sampled_from([0.0, 0.1]),
    steps=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=25)
def test_adam_matches_the_reference(engine, betas, weight_decay, steps, seed):
    rng = np.random.default_rng(seed)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.Adam(params, lr=decaying, betas=betas, eps=1e-6, weight_decay=weight_decay)
    history = run(engine, optimizer, params, steps, rng)
    lrs = [float(decaying(k)) for k in range(steps)]
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_adam(w0, grads, lrs, betas, 1e-6, weight_decay, decoupled=False)
        np.testing.assert_allclose(p.data, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.spec("OPTIM-014")
@given(weight_decay=st.sampled_from([0.0, 0.01, 0.5]), steps=st.integers(1, 6), seed=st.integers(0, 2**16))
@settings(max_examples=15)
def test_adamw_decouples_weight_decay(engine, weight_decay, steps, seed):
    rng = np.random.default_rng(seed)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.AdamW(params, lr=0.01, weight_decay=weight_decay)
    history = run(engine, optimizer, params, steps, rng)
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_adam(w0, grads, [0.01] * steps, (0.9, 0.999), 1e-6, weight_decay, decoupled=True)
        np.testing.assert_allclose(p.data, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.spec("OPTIM-014")
def test_adamw_takes_its_betas_and_eps(engine):
    rng = np.random.default_rng(8)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = engine.optim.AdamW(params, lr=0.01, betas=(0.5, 0.75), eps=1e-3, weight_decay=0.1)
    history = run(engine, optimizer, params, 3, rng)
    for p, w0, grads in zip(params, start, history, strict=True):
        expected = reference_adam(w0, grads, [0.01] * 3, (0.5, 0.75), 1e-3, 0.1, decoupled=True)
        np.testing.assert_allclose(p.data, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.spec("OPTIM-013", "OPTIM-014")
@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam_moments_and_weights_stay_float32(engine, kind):
    rng = np.random.default_rng(13)
    params = make_params(engine, rng)
    run(engine, getattr(engine.optim, kind)(params, lr=0.01), params, 2, rng)
    optimizer = getattr(engine.optim, kind)(params, lr=0.01)
    run(engine, optimizer, params, 1, rng)  # the first update, where the moments start from zero
    for index, entries in optimizer.state_dict()["state"].items():
        for key in ("exp_avg", "exp_avg_sq"):
            assert entries[key].dtype == np.float32, (index, key, entries[key].dtype)
            assert entries[key].shape == params[index].shape
    assert all(p.data.dtype == np.float32 for p in params)


@pytest.mark.spec("OPTIM-009")
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_parameters_without_gradient_are_skipped(engine, kind):
    rng = np.random.default_rng(9)
    params = make_params(engine, rng)
    # weight decay would move a parameter whose missing gradient were taken as zero
    optimizer = getattr(engine.optim, kind)(params, lr=0.1, weight_decay=0.1)
    frozen = params[1].data.copy()
    moving = params[0].data.copy()
    params[0].grad = np.ones(params[0].shape, np.float32)
    # its state is left as it was: absent, or as the optimizer set it up before any update
    state_before = {key: np.array(value) for key, value in (optimizer.state_dict()["state"].get(1) or {}).items()}
    optimizer.step()
    optimizer.step()
    assert np.array_equal(params[1].data, frozen)
    assert not np.array_equal(params[0].data, moving)
    assert optimizer.global_step == 2
    state_after = optimizer.state_dict()["state"].get(1) or {}
    assert state_after.keys() == state_before.keys()
    assert all(np.array_equal(np.asarray(state_after[key]), value) for key, value in state_before.items())


@pytest.mark.spec("OPTIM-009")
def test_a_parameter_without_gradient_does_not_stop_the_others(engine):
    rng = np.random.default_rng(17)
    params = make_params(engine, rng, shapes=((2,), (3, 4), (5,)))
    optimizer = engine.optim.SGD(params, lr=0.1)
    before = [p.data.copy() for p in params]
    grads = give_grads(params, rng)
    params[0].grad = None  # the first parameter has no gradient; the ones after it do
    optimizer.step()
    assert np.array_equal(params[0].data, before[0])
    for p, w, g in zip(params[1:], before[1:], grads[1:], strict=True):
        assert np.array_equal(p.data, w - np.float32(0.1) * g)


@pytest.mark.spec("OPTIM-010")
@pytest.mark.parametrize(
    "kind, kwargs", [("SGD", {"momentum": 0.9, "nesterov": True}), ("Adam", {}), ("AdamW", {"weight_decay": 0.1})]
)
def test_state_dict_round_trips_bit_exactly(engine, kind, kwargs):
    rng = np.random.default_rng(10)
    params = make_params(engine, rng)
    optimizer = getattr(engine.optim, kind)(params, lr=decaying, **kwargs)
    run(engine, optimizer, params, 3, rng)

    saved = optimizer.state_dict()
    clones = [engine.nn.Parameter(p.data) for p in params]
    restored = getattr(engine.optim, kind)(clones, lr=decaying, **kwargs)
    restored.load_state_dict(saved)
    assert restored.global_step == 3

    step_in_lockstep(optimizer, restored, params, clones, rng, steps=3)
    original, copy = optimizer.state_dict(), restored.state_dict()
    assert original["global_step"] == copy["global_step"] == 6
    for index, entries in original["state"].items():
        for key, value in entries.items():
            assert np.array_equal(np.asarray(value), np.asarray(copy["state"][index][key]))


@pytest.mark.spec("OPTIM-010")
def test_a_state_dict_brings_its_hyperparameters(engine):
    rng = np.random.default_rng(18)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=decaying, momentum=0.9, weight_decay=0.01)
    run(engine, optimizer, params, 2, rng)
    clones = [engine.nn.Parameter(p.data) for p in params]
    restored = engine.optim.SGD(clones, lr=0.5, momentum=0.1)  # other hyperparameters, replaced by the saved ones
    restored.load_state_dict(optimizer.state_dict())
    assert restored.lr_at(5) == optimizer.lr_at(5)
    step_in_lockstep(optimizer, restored, params, clones, rng, steps=2)


@pytest.mark.spec("OPTIM-010")
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_state_dict_of_a_fresh_optimizer_round_trips(engine, kind):
    rng = np.random.default_rng(14)
    params = make_params(engine, rng)
    clones = [engine.nn.Parameter(p.data) for p in params]
    optimizer = getattr(engine.optim, kind)(params, lr=decaying)
    restored = getattr(engine.optim, kind)(clones, lr=decaying)
    restored.load_state_dict(optimizer.state_dict())  # global step 0, no state yet
    assert restored.global_step == 0
    step_in_lockstep(optimizer, restored, params, clones, rng, steps=1)


@pytest.mark.spec("OPTIM-011")
@pytest.mark.parametrize(
    "kind, kwargs",
    [
        ("SGD", {"lr": -0.1}),
        ("SGD", {"lr": float("nan")}),
        ("SGD", {"lr": "fast"}),
        ("SGD", {"lr": 0.1, "momentum": -0.5}),
        ("SGD", {"lr": 0.1, "momentum": 1.5}),
        ("SGD", {"lr": 0.1, "momentum": float("nan")}),
        ("SGD", {"lr": 0.1, "nesterov": True}),
        ("SGD", {"lr": 0.1, "weight_decay": -1.0}),
        ("Adam", {"lr": 0.1, "betas": (1.0, 0.999)}),
        ("Adam", {"lr": 0.1, "betas": (0.9, -0.1)}),
        ("Adam", {"lr": 0.1, "betas": (0.9, 1.0)}),
        ("Adam", {"lr": 0.1, "betas": (0.9,)}),
        ("Adam", {"lr": 0.1, "betas": (float("nan"), 0.999)}),
        ("Adam", {"lr": 0.1, "eps": -1e-8}),
        ("AdamW", {"lr": 0.1, "weight_decay": -0.01}),
        ("Adam", {"lr": 0.1, "betas": (-0.1, 0.999)}),
    ],
)
def test_bad_hyperparameters_are_refused(engine, kind, kwargs):
    params = make_params(engine, np.random.default_rng(11))
    with pytest.raises(InvalidInputError):
        getattr(engine.optim, kind)(params, **kwargs)


@pytest.mark.spec("OPTIM-011")
@pytest.mark.parametrize("bad", [-0.1, float("inf"), float("nan")])
def test_a_schedule_giving_a_bad_rate_is_refused_before_that_update(engine, bad):
    rng = np.random.default_rng(19)
    params = make_params(engine, rng)
    optimizer = engine.optim.SGD(params, lr=lambda step: np.float32(bad if step == 1 else 0.1))
    give_grads(params, rng)
    optimizer.step()
    before = [p.data.copy() for p in params]
    give_grads(params, rng)
    with pytest.raises(InvalidInputError):
        optimizer.step()
    assert all(np.array_equal(p.data, w) for p, w in zip(params, before, strict=True))
    assert optimizer.global_step == 1


@pytest.mark.spec("OPTIM-011")
@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_a_bad_rate_written_into_a_param_group_is_refused(engine, bad):
    """Off the CS system a scalar rate may be written into a group (OPTIM-001); a bad one is refused there too."""
    params = make_params(engine, np.random.default_rng(20))
    optimizer = engine.optim.SGD(params, lr=0.1)
    engine.set_target("cpu")
    with pytest.raises(InvalidInputError):
        optimizer.param_groups[0]["lr"] = bad
    assert optimizer.current_lrs() == [np.float32(0.1)]


@pytest.mark.spec("OPTIM-011")
@pytest.mark.parametrize("params", [[], [np.ones(3)], "weights"])
def test_bad_parameter_lists_are_refused(engine, params):
    with pytest.raises(InvalidInputError):
        engine.optim.SGD(params, lr=0.1)


@pytest.mark.spec("OPTIM-012")
# a group's params may be any iterable of parameters, as in PyTorch's {"params": model.layer.parameters()}
@pytest.mark.parametrize("group_params", [list, tuple, iter], ids=["list", "tuple", "iterator"])
def test_each_group_has_its_own_schedule_and_hyperparameters(engine, group_params):
    rng = np.random.default_rng(12)
    first, second = make_params(engine, rng, shapes=((4,), (2, 3)))
    start = [first.data.copy(), second.data.copy()]
    optimizer = engine.optim.SGD(
        [
            {"params": group_params([first])},
            {"params": group_params([second]), "lr": lambda step: np.float32(0.5), "momentum": 0.9},
        ],
        lr=decaying,
    )
    history = run(engine, optimizer, [first, second], 4, rng)
    assert optimizer.lr_at(2) == [decaying(2), np.float32(0.5)]
    lrs = [float(decaying(k)) for k in range(4)]
    np.testing.assert_allclose(first.data, reference_sgd(start[0], history[0], lrs, 0.0, 0.0, False), rtol=1e-5)
    np.testing.assert_allclose(second.data, reference_sgd(start[1], history[1], [0.5] * 4, 0.9, 0.0, False), rtol=1e-5)


@pytest.mark.spec("OPTIM-012")
@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_each_adam_group_has_its_own_weight_decay(engine, kind):
    rng = np.random.default_rng(21)
    first, second = make_params(engine, rng, shapes=((4,), (2, 3)))
    start = [first.data.copy(), second.data.copy()]
    optimizer = getattr(engine.optim, kind)(
        [{"params": [first]}, {"params": [second], "weight_decay": 0.5}], lr=0.01, weight_decay=0.0
    )
    history = run(engine, optimizer, [first, second], 3, rng)
    decoupled = kind == "AdamW"
    for param, w0, grads, decay in zip((first, second), start, history, (0.0, 0.5), strict=True):
        expected = reference_adam(w0, grads, [0.01] * 3, (0.9, 0.999), 1e-6, decay, decoupled=decoupled)
        np.testing.assert_allclose(param.data, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.spec("OPTIM-015")
@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam_defaults_are_the_vendors(engine, kind):
    rng = np.random.default_rng(22)
    params = make_params(engine, rng)
    start = [p.data.copy() for p in params]
    optimizer = getattr(engine.optim, kind)(params)
    group = optimizer.param_groups[0]
    assert tuple(group["betas"]) == (0.9, 0.999) and group["eps"] == 1e-6 and group["weight_decay"] == 0.0
    assert optimizer.lr_at(0) == [np.float32(1e-3)]
    history = run(engine, optimizer, params, 3, rng)
    for p, w0, grads in zip(params, start, history, strict=True):
        # no weight decay: AdamW's default is not PyTorch's 0.01
        expected = reference_adam(w0, grads, [1e-3] * 3, (0.9, 0.999), 1e-6, 0.0, decoupled=kind == "AdamW")
        np.testing.assert_allclose(p.data, expected, rtol=2e-6, atol=1e-7)


def rounded_to_float32(exact: Fraction) -> np.float32:
    """The float32 nearest to the rational ``exact`` (ties to even): one rounding, done exactly."""
    guess = np.float32(float(exact))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.int32)) & 1))


def multiply_add_once(factor: np.ndarray, other: np.ndarray, addend: np.ndarray) -> np.ndarray:
    """``factor * other + addend`` of float32 arrays, rounded once (exact rational arithmetic)."""
    factor, other, addend = np.broadcast_arrays(factor, other, addend)
    exact = [
        Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        for a, b, c in zip(factor.ravel(), other.ravel(), addend.ravel(), strict=True)
    ]
    return np.array([rounded_to_float32(value) for value in exact], dtype=np.float32).reshape(factor.shape)


@pytest.mark.spec("OPTIM-016")
@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.7, 0.95)])
def test_adam_moments_round_their_coefficients_and_multiply_adds_once(engine, kind, betas):
    rng = np.random.default_rng(23)
    params = make_params(engine, rng)
    optimizer = getattr(engine.optim, kind)(params, lr=0.01, betas=betas)
    rest1, rest2 = np.float32(1.0 - betas[0]), np.float32(1.0 - betas[1])  # exact differences, rounded once
    beta1, beta2 = np.float32(betas[0]), np.float32(betas[1])
    first = give_grads(params, rng)
    optimizer.step()
    state = optimizer.state_dict()["state"]
    for index, g in enumerate(first):
        assert np.array_equal(state[index]["exp_avg"], rest1 * g)
        assert np.array_equal(state[index]["exp_avg_sq"], (rest2 * g) * g)
    moments = {i: (np.array(state[i]["exp_avg"]), np.array(state[i]["exp_avg_sq"])) for i in state}
    second = give_grads(params, rng)
    optimizer.step()
    state = optimizer.state_dict()["state"]
    for index, g in enumerate(second):
        m, v = moments[index]
        assert np.array_equal(state[index]["exp_avg"], multiply_add_once(g, rest1, beta1 * m))
        assert np.array_equal(state[index]["exp_avg_sq"], multiply_add_once(rest2 * g, g, beta2 * v))


@pytest.mark.spec("OPTIM-017")
def test_sgd_state_is_a_zero_started_buffer_or_none(engine):
    rng = np.random.default_rng(24)
    params = make_params(engine, rng, shapes=((3,),))
    optimizer = engine.optim.SGD(params, lr=0.1, momentum=0.9)
    params[0].grad = np.array([-0.0, 1.0, -2.0], dtype=np.float32)
    optimizer.step()
    buffer = optimizer.state_dict()["state"][0]["momentum_buffer"]
    assert np.array_equal(buffer, [0.0, 1.0, -2.0]) and not np.signbit(buffer[0])  # 0.9 * 0 + (-0.0) = +0.0
    plain = engine.optim.SGD(params, lr=0.1)
    params[0].grad = np.ones(3, np.float32)
    plain.step()
    assert plain.state_dict()["state"] == {}  # without momentum a parameter keeps no state


@pytest.mark.spec("OPTIM-018")
def test_adam_l2_term_and_infinite_gradients(engine):
    params = [engine.nn.Parameter(np.array([2.8, 2.8], dtype=np.float32))]
    optimizer = engine.optim.Adam(params, lr=0.01)
    params[0].grad = np.array([-0.88, -np.inf], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        optimizer.step()  # the weight of the infinite gradient becomes NaN (-inf / inf)
        optimizer.step()  # without decay, no 0 * NaN enters its gradient
    state = optimizer.state_dict()["state"][0]
    assert np.isfinite(state["exp_avg"][0]) and state["exp_avg"][1] == -np.inf
    assert np.isfinite(state["exp_avg_sq"][0]) and state["exp_avg_sq"][1] == np.inf
