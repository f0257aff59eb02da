"""Hypothesis strategies shared by the conformance suite and by other implementations' tests.

They generate the inputs the documents talk about: global steps, loss scales, GradScaler
configurations and gradients, optionally with an injected inf or NaN (the overflow that dynamic
loss scaling reacts to). Magnitudes are kept where float32 arithmetic is exact enough that a test's
own expectation never depends on rounding luck: finite gradients stay within ``+-max_magnitude`` and
loss scales are powers of two.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

MAX_GLOBAL_STEP = 1_000_000
SMALLEST_MIN_LOSS_SCALE_EXPONENT = -14
NON_FINITE_VALUES = (float("inf"), float("-inf"), float("nan"))


def global_steps(max_step: int = MAX_GLOBAL_STEP) -> st.SearchStrategy[int]:
    """A non-negative global step."""
    return st.integers(min_value=0, max_value=max_step)


def global_step_arrays(max_step: int = MAX_GLOBAL_STEP, max_size: int = 32) -> st.SearchStrategy[np.ndarray]:
    """An int64 array (0-3 dimensions) of non-negative global steps."""
    return hnp.arrays(
        dtype=np.int64,
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=max(1, max_size // 4)),
        elements=st.integers(min_value=0, max_value=max_step),
    )


def powers_of_two(min_exponent: int, max_exponent: int) -> st.SearchStrategy[float]:
    """``2.0 ** k`` for an integer ``k`` in ``[min_exponent, max_exponent]``."""
    return st.integers(min_value=min_exponent, max_value=max_exponent).map(lambda k: 2.0**k)


def loss_scales(
    min_exponent: int = SMALLEST_MIN_LOSS_SCALE_EXPONENT, max_exponent: int = 31
) -> st.SearchStrategy[float]:
    """Loss scales as DLS produces them: powers of two inside the documented range."""
    return powers_of_two(min_exponent, max_exponent)


@st.composite
def dynamic_grad_scaler_configs(
    draw: st.DrawFn, max_steps_per_increase: int = 4, min_steps_per_increase: int = 0
) -> dict[str, Any]:
    """Keyword arguments for a dynamic GradScaler with a small, reachable scale range.

    ``min_loss_scale <= init_scale <= max_loss_scale``, all powers of two, and a short
    ``steps_per_increase`` so that a short run exercises both growth and back-off.
    """
    min_exponent = draw(st.integers(min_value=SMALLEST_MIN_LOSS_SCALE_EXPONENT, max_value=4))
    max_exponent = draw(st.integers(min_value=min_exponent, max_value=min_exponent + 6))
    # start at either clamp as often as in between: the clamps are where scalers go wrong
    init_exponent = draw(
        st.one_of(
            st.just(min_exponent), st.just(max_exponent), st.integers(min_value=min_exponent, max_value=max_exponent)
        )
    )
    config: dict[str, Any] = {
        "loss_scale": "dynamic",
        "init_scale": 2.0**init_exponent,
        "min_loss_scale": 2.0**min_exponent,
        "max_loss_scale": 2.0**max_exponent,
        "steps_per_increase": draw(st.integers(min_value=min_steps_per_increase, max_value=max_steps_per_increase)),
        "overflow_tolerance": draw(st.sampled_from([0.0, 0.25, 0.5])),
    }
    if draw(st.booleans()):
        config["max_gradient_norm"] = draw(st.sampled_from([0.5, 1.0, 4.0]))
    return config


def static_grad_scaler_configs() -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for a static GradScaler: a falsy loss_scale (1.0) or a fixed number."""
    return st.one_of(
        st.sampled_from([{}, {"loss_scale": None}, {"loss_scale": 0}, {"loss_scale": 0.0}]),
        loss_scales(-4, 16).map(lambda scale: {"loss_scale": scale}),
    )


def finite_gradients(shape: tuple[int, ...], max_magnitude: float = 8.0) -> st.SearchStrategy[np.ndarray]:
    """A float32 gradient array with finite entries in ``[-max_magnitude, max_magnitude]``."""
    return hnp.arrays(
        dtype=np.float32,
        shape=shape,
        elements=st.floats(-max_magnitude, max_magnitude, allow_nan=False, allow_infinity=False, width=32),
    )


@st.composite
def gradients_with_nonfinite(draw: st.DrawFn, shape: tuple[int, ...], max_magnitude: float = 8.0) -> np.ndarray:
    """A float32 gradient array with at least one injected +inf, -inf or NaN."""
    grad = draw(finite_gradients(shape, max_magnitude)).copy()
    size = int(np.prod(shape))
    count = draw(st.integers(min_value=1, max_value=max(1, min(size, 3))))
    positions = draw(st.lists(st.integers(0, size - 1), min_size=count, max_size=count))
    flat = grad.reshape(-1)
    for position in positions:
        flat[position] = draw(st.sampled_from(NON_FINITE_VALUES))
    return grad
