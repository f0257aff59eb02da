"""Data pipelines: slices, shuffle, repeat, batch and map, their static properties, iterators and restores.

A program builds a pipeline over a small array or a ``(features, labels)`` pair, asks its
cardinality and static properties, runs an iterator (always with a fixed ``seed_entropy``, so an
unseeded shuffle is reproducible), takes a few elements, saves the iterator's position and restores
a second iterator from it, and takes elements from both. Arguments are sometimes at an edge: a
batch of 0, a buffer of 0, ``repeat(0)``, an empty or 0-d array, a pair of unequal lengths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from csconform.testing.differential.areas import Area, Context
from csconform.testing.differential.areas.values import branch
from csconform.testing.differential.program import Expr, call

MAPS = ("lambda x: x * 2", "lambda x: x + 1")
PAIR_MAPS = ("lambda x, y: (x * 2, y)", "lambda x, y: (y, x)")


@st.composite
def source(draw: st.DrawFn) -> tuple[Any, bool]:
    """What ``from_tensor_slices`` gets, and whether its elements are pairs."""
    rows = draw(st.sampled_from([5, 4, 1, 7, 0]))
    features = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    choice = draw(branch(10))
    if choice <= 4:
        return features, False
    if choice <= 7:
        return (features, np.arange(rows, dtype=np.int64)), True
    if choice == 8:
        return (features, np.arange(rows + 1, dtype=np.int64)), True
    return np.float32(3.0), False


@st.composite
def stage(draw: st.DrawFn, pairs: bool) -> str:
    choice = draw(branch(4))
    if choice == 0:
        return call("ds.batch", draw(st.sampled_from([2, 3, 1, 0])), drop_remainder=draw(st.booleans()))
    if choice == 1:
        return call("ds.repeat", draw(st.sampled_from([2, None, 1, 0, -1])))
    if choice == 2:
        arguments: dict[str, Any] = {"seed": draw(st.sampled_from([7, None, 0]))}
        return call("ds.shuffle", draw(st.sampled_from([3, 1, 100, 0])), **arguments)
    return call("ds.map", Expr(draw(st.sampled_from(PAIR_MAPS if pairs else MAPS))))


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    tensors, pairs = draw(source())
    lines = ["ds = " + call("impl.data.Dataset.from_tensor_slices", tensors)]
    lines += ["ds = " + text for text in draw(st.lists(stage(pairs), max_size=4))]
    lines += draw(
        st.lists(
            st.sampled_from(["ds.cardinality()", "ds.batch_size_is_static()", "ds.has_deterministic_shuffle()"]),
            max_size=2,
        )
    )
    lines.append("it = " + call("ds.iterator", seed_entropy=draw(st.sampled_from([1, 12345]))))
    lines += ["next(it)"] * draw(st.integers(1, 4))
    if draw(st.booleans()):
        lines += ["state = it.state()", "again = impl.data.DatasetIterator.restore(ds, state)"]
        for _ in range(draw(st.integers(1, 3))):
            lines += ["next(again)", "next(it)"]
    return lines


AREA = Area(
    "data",
    "data pipelines: slices, shuffle, repeat, batch, map; cardinality; iterators and their restores",
    frozenset({"data"}),
    statements,
)
