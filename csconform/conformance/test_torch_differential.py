"""Differential checks against PyTorch where the documented semantics coincide with torch's.

* torch.amp.GradScaler: Cerebras DLS with overflow_tolerance 0 and steps_per_increase N follows the
  same loss-scale trajectory as torch with growth_interval N + 1 (public-facts#torch.amp.GradScaler),
  except where the global float32 norm overflows although every element is finite.
* LR schedules with a torch counterpart, driven step by step through torch's own schedulers.
* float16 and bfloat16 rounding against torch's casts.

Everything is skipped cleanly when torch is not installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

try:
    import torch
except ImportError:  # collected but skipped, so the matrix shows these rules' checks as skipped
    torch = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: pip install 'csconform[torch]'")

SHAPES = ((3, 2), (4,))
BIG_MAX_SCALE = 2.0**100  # keeps the Cerebras clamp out of the way; torch has no maximum


# --- GradScaler trajectories ---------------------------------------------------------------------------


def _gradients(kind: str) -> list[np.ndarray]:
    grads = [np.full(shape, 0.25, dtype=np.float32) for shape in SHAPES]
    if kind == "inf":
        grads[1][1] = np.inf
    elif kind == "nan":
        grads[0][0, 1] = np.nan
    elif kind == "huge":  # every element finite, but the float32 square-sum overflows
        grads = [np.full(shape, 3e19, dtype=np.float32) for shape in SHAPES]
    return grads


class _TorchLoop:
    """torch.amp.GradScaler on CPU with an SGD whose step calls are counted."""

    def __init__(self, init_scale: float, growth_interval: int) -> None:
        self.params = [torch.nn.Parameter(torch.zeros(shape)) for shape in SHAPES]
        self.optimizer = torch.optim.SGD(self.params, lr=0.125)
        self.steps_taken = 0
        original_step = self.optimizer.step

        def counting_step(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            self.steps_taken += 1
            return original_step(*args, **kwargs)

        self.optimizer.step = counting_step  # type: ignore[method-assign]
        self.scaler = torch.amp.GradScaler(
            "cpu", init_scale=init_scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=growth_interval
        )

    def iteration(self, grads: list[np.ndarray]) -> None:
        self.scaler.scale(torch.tensor(1.0))  # creates the scale tensor, as scale(loss) does
        scale = self.scaler.get_scale()
        with np.errstate(over="ignore", invalid="ignore"):
            for param, grad in zip(self.params, grads, strict=True):
                param.grad = torch.from_numpy(grad * np.float32(scale))
        self.scaler.step(self.optimizer)
        self.scaler.update()


class _EngineLoop:
    def __init__(self, engine, init_scale: float, steps_per_increase: int) -> None:  # noqa: ANN001
        self.params = [engine.nn.Parameter(np.zeros(shape, dtype=np.float32)) for shape in SHAPES]
        self.optimizer = engine.optim.SGD(self.params, lr=0.125)
        self.scaler = engine.amp.GradScaler(
            loss_scale="dynamic",
            init_scale=init_scale,
            steps_per_increase=steps_per_increase,
            min_loss_scale=2.0**-14,
            max_loss_scale=BIG_MAX_SCALE,
            overflow_tolerance=0.0,
        )

    def iteration(self, grads: list[np.ndarray]) -> None:
        scale = np.float32(self.scaler.get_scale())
        with np.errstate(over="ignore", invalid="ignore"):
            for param, grad in zip(self.params, grads, strict=True):
                param.grad = grad * scale
        self.scaler.step(self.optimizer)
        self.scaler.update()


@pytest.mark.spec("GRADSCALER-031")
@settings(max_examples=25, deadline=None)  # its first example starts torch's GradScaler: seconds on a busy machine
@given(
    steps_per_increase=st.integers(1, 5),  # 0, growth after every clean update, has its own check below
    init_exponent=st.integers(0, 16),
    kinds=st.lists(st.sampled_from(["finite", "finite", "inf", "nan"]), max_size=30),
)
def test_dls_trajectory_matches_torch_with_growth_interval_plus_one(engine, steps_per_increase, init_exponent, kinds):
    ours = _EngineLoop(engine, 2.0**init_exponent, steps_per_increase)
    theirs = _TorchLoop(2.0**init_exponent, steps_per_increase + 1)
    for kind in kinds:
        grads = _gradients(kind)
        ours.iteration(grads)
        theirs.iteration(grads)
        assert ours.scaler.get_scale() == theirs.scaler.get_scale()
        assert ours.optimizer.global_step == theirs.steps_taken
        for mine, torch_param in zip(ours.params, theirs.params, strict=True):
            np.testing.assert_array_equal(mine.data, torch_param.detach().numpy())
    assert ours.scaler.state_dict()["num_skipped_steps"] == len(kinds) - theirs.steps_taken


@pytest.mark.spec("GRADSCALER-031")
def test_steps_per_increase_0_matches_torch_growing_after_every_other_update(engine):
    ours = _EngineLoop(engine, 1.0, 0)
    theirs = _TorchLoop(1.0, 1)
    for kind in ["finite", "finite", "inf", "finite", "finite", "nan", "finite"]:
        ours.iteration(_gradients(kind))
        theirs.iteration(_gradients(kind))
        assert ours.scaler.get_scale() == theirs.scaler.get_scale()


@pytest.mark.spec("GRADSCALER-031")
def test_default_growth_interval_maps_to_steps_per_increase_1999(engine):
    ours = _EngineLoop(engine, 2.0**16, 1999)
    theirs = _TorchLoop(2.0**16, 2000)  # torch's default growth_interval
    for _ in range(2000):
        ours.iteration(_gradients("finite"))
        theirs.iteration(_gradients("finite"))
    assert ours.scaler.get_scale() == theirs.scaler.get_scale() == 2.0**17


@pytest.mark.spec("GRADSCALER-032")
def test_norm_overflow_with_finite_elements_differs_from_torch(engine):
    ours = _EngineLoop(engine, 1.0, 100)
    theirs = _TorchLoop(1.0, 101)
    ours.iteration(_gradients("huge"))
    theirs.iteration(_gradients("huge"))
    assert ours.optimizer.global_step == 0 and ours.scaler.get_scale() == 0.5
    assert theirs.steps_taken == 1 and theirs.scaler.get_scale() == 1.0


# --- LR schedules ---------------------------------------------------------------------------------------


def torch_trajectory(scheduler_name: str, base_lr: float, steps: int, /, **options: Any) -> np.ndarray:
    """The learning rate torch uses for optimizer steps 0 .. steps - 1 under its scheduler
    ``torch.optim.lr_scheduler.<scheduler_name>(optimizer, **options)`` over plain SGD."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=base_lr)
    scheduler = getattr(torch.optim.lr_scheduler, scheduler_name)(optimizer, **options)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return np.array(rates)


def assert_same_trajectory(ours, theirs: np.ndarray, rtol: float = 2e-5) -> None:  # noqa: ANN001
    rates = ours(np.arange(len(theirs), dtype=np.int64))
    scale = max(float(np.max(np.abs(theirs))), 1e-12)
    np.testing.assert_allclose(rates, theirs, rtol=rtol, atol=rtol * scale)


def assert_same_as_torch(engine, name: str, init: float, rtol: float = 2e-5, **arguments: Any) -> None:  # noqa: ANN001
    """Our scheduler ``name`` from ``init`` follows torch's of the same name over 200 steps, given the
    same ``arguments`` (where the two take the same ones and mean the same by them)."""
    ours = getattr(engine.optim.lr_scheduler, name)(initial_learning_rate=init, **arguments)
    assert_same_trajectory(ours, torch_trajectory(name, init, 200, **arguments), rtol=rtol)


RATE = st.floats(1e-3, 1.0)


@pytest.mark.spec("LR-014")
@settings(max_examples=10)
@given(init=RATE, step_size=st.integers(1, 40), gamma=st.floats(0.1, 1.0))
def test_step_lr_matches_torch(engine, init, step_size, gamma):
    assert_same_as_torch(engine, "StepLR", init, step_size=step_size, gamma=gamma)


@pytest.mark.spec("LR-015")
@settings(max_examples=10)
@given(init=RATE, gamma=st.floats(0.1, 1.0), milestones=st.sets(st.integers(1, 199), max_size=5).map(sorted))
def test_multi_step_lr_matches_torch(engine, init, gamma, milestones):
    assert_same_as_torch(engine, "MultiStepLR", init, milestones=milestones, gamma=gamma)


@pytest.mark.spec("LR-009")
@settings(max_examples=10)
@given(init=RATE, total=st.integers(1, 50), rate=st.floats(0.3, 1.0))
def test_continuous_exponential_lr_matches_torch_with_gamma_root(engine, init, total, rate):
    ours = engine.optim.lr_scheduler.ExponentialLR(initial_learning_rate=init, total_iters=total, decay_rate=rate)
    gamma = rate ** (1.0 / total)
    theirs = torch_trajectory("ExponentialLR", init, 200, gamma=gamma)
    assert_same_trajectory(ours, theirs, rtol=1e-4)


@pytest.mark.spec("LR-013")
@settings(max_examples=10)
@given(init=RATE, eta_fraction=st.floats(0.0, 0.5), t_max=st.integers(1, 80))
def test_cosine_annealing_lr_matches_torch(engine, init, eta_fraction, t_max):
    assert_same_as_torch(engine, "CosineAnnealingLR", init, T_max=t_max, eta_min=init * eta_fraction, rtol=1e-4)


@pytest.mark.spec("LR-006")
@settings(max_examples=10)
@given(init=RATE, total=st.integers(1, 150), power=st.floats(0.5, 3.0))
def test_polynomial_lr_to_zero_matches_torch(engine, init, total, power):
    ours = engine.optim.lr_scheduler.PolynomialLR(
        initial_learning_rate=init, end_learning_rate=0.0, total_iters=total, power=power
    )
    theirs = torch_trajectory("PolynomialLR", init, 200, total_iters=total, power=power)
    assert_same_trajectory(ours, theirs, rtol=1e-4)


@pytest.mark.spec("LR-008")
@settings(max_examples=10)
@given(init=RATE, start=st.floats(0.05, 1.0), end=st.floats(0.0, 1.0), total=st.integers(1, 150))
def test_linear_lr_matches_torch(engine, init, start, end, total):
    ours = engine.optim.lr_scheduler.LinearLR(
        initial_learning_rate=init * start, end_learning_rate=init * end, total_iters=total
    )
    theirs = torch_trajectory("LinearLR", init, 200, start_factor=start, end_factor=end, total_iters=total)
    assert_same_trajectory(ours, theirs, rtol=1e-4)


@pytest.mark.spec("LR-016")
@settings(max_examples=10)
@given(init=RATE, multiplier=st.floats(0.9, 1.0))
def test_multiplicative_lr_matches_torch(engine, init, multiplier):
    ours = engine.optim.lr_scheduler.MultiplicativeLR(initial_learning_rate=init, multiplier=multiplier)
    theirs = torch_trajectory("MultiplicativeLR", init, 200, lr_lambda=lambda _epoch: multiplier)
    assert_same_trajectory(ours, theirs, rtol=1e-4)


@pytest.mark.spec("LR-019")
@settings(max_examples=10)
@given(
    base=RATE,
    peak=RATE,
    up=st.integers(1, 30),
    down=st.integers(1, 30),
    mode=st.sampled_from(["triangular", "triangular2", "exp_range"]),
    gamma=st.floats(0.95, 1.0),
)
def test_cyclic_lr_matches_torch(engine, base, peak, up, down, mode, gamma):
    cycle = {"base_lr": base, "max_lr": peak, "step_size_up": up, "step_size_down": down, "mode": mode, "gamma": gamma}
    ours = engine.optim.lr_scheduler.CyclicLR(**cycle)
    theirs = torch_trajectory("CyclicLR", base, 200, **cycle, cycle_momentum=False)
    assert_same_trajectory(ours, theirs)


@pytest.mark.spec("LR-020")
@settings(max_examples=10)
@given(
    peak=RATE,
    div=st.floats(2.0, 100.0),
    final_div=st.floats(1.0, 1e4),
    total=st.integers(30, 200),
    pct=st.floats(0.1, 0.45),
    three_phase=st.booleans(),
    strategy=st.sampled_from(["cos", "linear"]),
)
def test_one_cycle_lr_matches_torch(engine, peak, div, final_div, total, pct, three_phase, strategy):
    # the same arguments in both; torch starts at max_lr / div_factor, ours at initial_learning_rate
    cycle = {
        "max_lr": peak,
        "total_steps": total,
        "pct_start": pct,
        "final_div_factor": final_div,
        "three_phase": three_phase,
        "anneal_strategy": strategy,
    }
    ours = engine.optim.lr_scheduler.OneCycleLR(initial_learning_rate=peak / div, **cycle)
    theirs = torch_trajectory("OneCycleLR", peak, total, div_factor=div, **cycle, cycle_momentum=False)
    assert_same_trajectory(ours, theirs)


# --- 16-bit rounding ---------------------------------------------------------------------------------------

FLOAT32_VALUES = hnp.arrays(
    dtype=np.float32, shape=st.integers(1, 64), elements=st.floats(width=32, allow_nan=True, allow_infinity=True)
)


@pytest.mark.spec("PRECISION-012")
@given(values=FLOAT32_VALUES)
def test_float16_rounding_matches_torch(engine, values):
    expected = torch.from_numpy(values).to(torch.float16).to(torch.float32).numpy()
    np.testing.assert_array_equal(engine.precision.quantize(values, "float16"), expected)


@pytest.mark.spec("PRECISION-013")
@given(values=FLOAT32_VALUES)
def test_bfloat16_rounding_matches_torch(engine, values):
    expected = torch.from_numpy(values).to(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(engine.precision.quantize(values, "bfloat16"), expected)
