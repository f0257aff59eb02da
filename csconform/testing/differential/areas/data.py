"""Data pipelines: slices, shuffle, repeat, batch and map, their static properties, iterators and restores.

A program builds a pipeline over a small array or a ``(features, labels)`` pair, asks its
cardinality and static properties, and runs an iterator (always with a fixed ``seed_entropy``, so an
unseeded shuffle is reproducible). Half of the programs take a few elements, save the iterator's
position, restore a second iterator from it and take elements from both. The other half run 2 to 4
epochs: the stages of one epoch, a ``repeat`` of the epochs (now and then a batch across them), and
every element read, one past the end, so that what an epoch does again (a shuffle's order, a batch's
remainder) is compared; now and then the rest of the epochs is read from a restore. Arguments are
sometimes at an edge: a batch of 0, a buffer of 0, ``repeat(0)``, an empty or 0-d array, a pair of
unequal lengths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from csconform.testing.differential.areas import Area, Context
from csconform.testing.differential.areas.values import branch, sometimes
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


STAGES = ("batch", "repeat", "shuffle", "map")
EPOCH_STAGES = ("batch", "shuffle", "map")
"""The stages of one epoch of a program that runs several (the epochs are the ``repeat`` after them)."""
MAX_EPOCHS = 4


@dataclass(frozen=True)
class Stage:
    """A stage's statement, and how many elements it yields (for a program that reads them all)."""

    text: str
    batch_size: int | None = None
    drop_remainder: bool = False
    epochs: int = 1
    """How many times the stage runs its input (a ``repeat`` of the epochs)."""

    def passes_on(self, elements: int) -> int:
        """The number of elements the stage yields of ``elements`` (0 for a batch of 0: it is refused)."""
        elements *= self.epochs
        if self.batch_size is None:
            return elements
        if self.batch_size < 1:
            return 0
        return elements // self.batch_size if self.drop_remainder else -(-elements // self.batch_size)


@st.composite
def stage(draw: st.DrawFn, pairs: bool, kinds: tuple[str, ...] = STAGES) -> Stage:
    kind = kinds[draw(branch(len(kinds)))]
    if kind == "batch":
        size, drop = draw(st.sampled_from([2, 3, 1, 0])), draw(st.booleans())
        return Stage(call("ds.batch", size, drop_remainder=drop), size, drop)
    if kind == "repeat":
        return Stage(call("ds.repeat", draw(st.sampled_from([2, None, 1, 0, -1]))))
    if kind == "shuffle":
        arguments: dict[str, Any] = {"seed": draw(st.sampled_from([7, None, 0]))}
        return Stage(call("ds.shuffle", draw(st.sampled_from([3, 1, 100, 0])), **arguments))
    return Stage(call("ds.map", Expr(draw(st.sampled_from(PAIR_MAPS if pairs else MAPS)))))


def _rows(tensors: Any) -> int:
    first = tensors[0] if isinstance(tensors, tuple) else tensors
    return len(first) if np.ndim(first) else 0


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    tensors, pairs = draw(source())
    if draw(st.booleans()):
        return draw(epochs_read(tensors, pairs, draw(st.integers(2, MAX_EPOCHS))))
    return draw(few_read(tensors, pairs))


def _building(draw: st.DrawFn, tensors: Any, stages: list[Stage]) -> list[str]:
    """The pipeline's statements, questions about it, and its iterator."""
    lines = ["ds = " + call("impl.data.Dataset.from_tensor_slices", tensors)]
    lines += ["ds = " + stage.text for stage in stages]
    lines += draw(
        st.lists(
            st.sampled_from(["ds.cardinality()", "ds.batch_size_is_static()", "ds.has_deterministic_shuffle()"]),
            max_size=2,
        )
    )
    lines.append("it = " + call("ds.iterator", seed_entropy=draw(st.sampled_from([1, 12345]))))
    return lines


@st.composite
def few_read(draw: st.DrawFn, tensors: Any, pairs: bool) -> list[str]:
    """Any pipeline; a few elements read, then maybe a restore read alongside the iterator."""
    lines = _building(draw, tensors, draw(st.lists(stage(pairs), max_size=4)))
    lines += ["next(it)"] * draw(st.integers(1, 4))
    if draw(st.booleans()):
        lines += ["state = it.state()", "again = impl.data.DatasetIterator.restore(ds, state)"]
        for _ in range(draw(st.integers(1, 3))):
            lines += ["next(again)", "next(it)"]
    return lines


@st.composite
def epochs_read(draw: st.DrawFn, tensors: Any, pairs: bool, epochs: int) -> list[str]:
    """The stages of one epoch, a ``repeat`` of ``epochs`` (now and then a batch across the epochs after
    it), and every element read and one more; now and then the rest is read from a restore."""
    stages = draw(st.lists(stage(pairs, EPOCH_STAGES), max_size=3))
    stages.append(Stage(call("ds.repeat", epochs), epochs=epochs))
    if draw(sometimes(4)):
        stages.append(draw(stage(pairs, ("batch",))))
    lines = _building(draw, tensors, stages)
    elements = _rows(tensors)
    for each in stages:
        elements = each.passes_on(elements)
    reads = elements + 1  # the last one stops the iteration
    restored_at = draw(st.integers(1, reads - 1)) if reads > 1 and draw(sometimes(3)) else reads
    lines += ["next(it)"] * restored_at
    if restored_at < reads:
        lines += ["state = it.state()", "again = impl.data.DatasetIterator.restore(ds, state)"]
        lines += ["next(again)"] * (reads - restored_at)
    return lines


AREA = Area(
    "data",
    "data pipelines: slices, shuffle, repeat, batch, map; cardinality; iterators and their restores",
    frozenset({"data"}),
    statements,
)
