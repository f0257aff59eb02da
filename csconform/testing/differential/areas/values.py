"""Values the areas share: float32 weights and gradients, parameters."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from csconform.testing.differential.program import call

SHAPES = ((2,), (3,), (2, 2))
NON_FINITE = (float("inf"), float("-inf"), float("nan"))


def branch(count: int) -> st.SearchStrategy[int]:
    """One of ``count`` branches, uniformly (``st.integers`` draws its bounds far more often); shrinks to 0."""
    return st.sampled_from(range(count))


def sometimes(one_in: int) -> st.SearchStrategy[bool]:
    """True once in ``one_in`` draws; shrinks to False (the ordinary case)."""
    return branch(one_in).map(lambda index: index == one_in - 1)


def small_floats(max_magnitude: float = 4.0) -> st.SearchStrategy[float]:
    """Float32 values of moderate size, simple ones first."""
    return st.one_of(
        st.sampled_from([1.0, 0.5, -1.0, 2.0, 0.0, -0.25]),
        st.floats(-max_magnitude, max_magnitude, allow_nan=False, width=32),
    )


def float32_arrays(
    shape: tuple[int, ...], elements: st.SearchStrategy[float] | None = None
) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float32, shape, elements=elements if elements is not None else small_floats())


@st.composite
def gradients(draw: st.DrawFn, shape: tuple[int, ...], scale_exponents: tuple[int, int] = (0, 0)) -> np.ndarray:
    """A float32 gradient: moderate values times ``2**k``, now and then with an inf or NaN."""
    grad = draw(float32_arrays(shape)) * np.float32(2.0 ** draw(st.integers(*scale_exponents)))
    if draw(sometimes(4)):
        flat = grad.reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(NON_FINITE))
    return grad


@st.composite
def parameters(draw: st.DrawFn, min_count: int = 1, max_count: int = 2) -> tuple[list[str], list[tuple[int, ...]]]:
    """Statements ``p0 = impl.nn.Parameter(...)``; the shapes of the parameters."""
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=min_count, max_size=max_count))
    lines = [f"p{i} = " + call("impl.nn.Parameter", draw(float32_arrays(shape))) for i, shape in enumerate(shapes)]
    return lines, shapes
