"""A small Dataset over NumPy arrays, shaped like ``tf.data.Dataset``.

The CerebrasEstimator documents its input-function rules in terms of the Dataset API (``shuffle``,
``repeat``, ``batch(..., drop_remainder=True)``, ``map``), so the engine needs one to check them.
A Dataset is an immutable description of a pipeline; ``iterator()`` runs it. Everything about a
pipeline that matters for the rules can be read without running it: ``cardinality()`` (how many
elements, or ``INFINITE``), ``batch_size_is_static()`` (is every batch the same size) and
``has_deterministic_shuffle()``.

Iterators are checkpointable: their state is the seed of their random stream plus the number of
elements already produced, and ``restore`` replays the pipeline up to that point, so a resumed run
sees exactly the batches an uninterrupted run would have seen.

Shuffling permutes with a buffer of ``buffer_size`` elements, like TensorFlow: each output element
is drawn uniformly from the buffer, which is refilled from the input. A shuffle with ``seed=None``
takes fresh entropy from the operating system for every iterator, so two input workers running the
same input function shuffle differently; a fixed seed makes every worker identical.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from csconform.arguments import check_callable, check_integer, check_type
from csconform.errors import InvalidInputError
from csconform.interface.kit.batching import stack
from csconform.interface.kit.checkpoint_sections import DataPosition, data_position

INFINITE = -1
"""The cardinality of a dataset that never runs out (``repeat()`` with ``count=None``)."""

Element = Any  # an ndarray, or a tuple of ndarrays (e.g. ``(features, labels)``)


class Dataset:
    """Base of every pipeline stage. Build one with :meth:`from_tensor_slices`."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Dataset:
        if cls is Dataset:  # the base has no elements: iterating it could only fail from inside
            raise InvalidInputError("a Dataset is built with Dataset.from_tensor_slices(...), not Dataset()")
        return super().__new__(cls)

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        """One element per row of ``tensors`` (an array, or a tuple of arrays with equal length)."""
        return _Slices(tensors)

    # --- transformations (each returns a new Dataset) ---------------------------------------------

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Dataset:
        return _Shuffle(self, buffer_size, seed)

    def repeat(self, count: int | None = None) -> Dataset:
        return _Repeat(self, count)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        return _Batch(self, batch_size, drop_remainder)

    def map(self, fn: Callable[..., Element]) -> Dataset:
        return _Map(self, check_callable("map's fn", fn))

    # --- static properties ---------------------------------------------------------------------------

    def cardinality(self) -> int:
        """Number of elements this dataset yields, or ``INFINITE``."""
        raise NotImplementedError

    def batch_size_is_static(self) -> bool:
        """True when every batch has the same size (no batch, or batch with ``drop_remainder``)."""
        return self._parent().batch_size_is_static()

    def has_deterministic_shuffle(self) -> bool:
        """True when some shuffle stage uses a fixed seed (every iterator yields the same order)."""
        return self._parent().has_deterministic_shuffle()

    def shuffles(self) -> bool:
        return self._parent().shuffles()

    # --- running ---------------------------------------------------------------------------------------

    def iterator(self, seed_entropy: int | None = None) -> DatasetIterator:
        """Run the pipeline. ``seed_entropy`` fixes the random stream of unseeded shuffles."""
        return DatasetIterator(self, seed_entropy)

    def __iter__(self) -> Iterator[Element]:
        return iter(self.iterator())

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        raise NotImplementedError

    def _parent(self) -> Dataset:
        raise NotImplementedError


class _StageRngs:
    """The random generators of one iterator run, one per shuffle stage, created on first use."""

    def __init__(self, seed_entropy: int) -> None:
        self.seed_entropy = seed_entropy
        self._generators: dict[int, np.random.Generator] = {}
        self._next_stage = 0

    def for_stage(self, stage: _Shuffle) -> np.random.Generator:
        key = id(stage)
        if key not in self._generators:
            if stage.seed is not None:
                seed_sequence = np.random.SeedSequence(stage.seed)
            else:
                seed_sequence = np.random.SeedSequence(self.seed_entropy, spawn_key=(self._next_stage,))
                self._next_stage += 1
            self._generators[key] = np.random.default_rng(seed_sequence)
        return self._generators[key]


def _array(tensor: Any) -> np.ndarray:
    try:
        return np.asarray(tensor)
    except (TypeError, ValueError) as exc:  # a ragged list, an object NumPy cannot hold
        raise InvalidInputError(f"from_tensor_slices needs arrays, got {type(tensor).__name__} ({exc})") from None


def _as_element_tuple(tensors: Any) -> tuple[np.ndarray | None, ...] | np.ndarray:
    if isinstance(tensors, tuple):
        # ``None`` entries stay None in every element (e.g. ``(features, None)``: no labels).
        arrays = tuple(None if t is None else _array(t) for t in tensors)
        present = [a for a in arrays if a is not None]
        if not present:
            raise InvalidInputError("from_tensor_slices needs at least one array")
        lengths = {a.shape[0] if a.ndim else None for a in present}
        if None in lengths or len(lengths) != 1:
            raise InvalidInputError(
                f"from_tensor_slices needs arrays with one shared first dimension; got shapes "
                f"{[a.shape for a in present]}"
            )
        return arrays
    array = _array(tensors)
    if array.ndim == 0:
        raise InvalidInputError("from_tensor_slices needs an array with at least one dimension")
    return array


class _Slices(Dataset):
    def __init__(self, tensors: Any) -> None:
        self.tensors = _as_element_tuple(tensors)

    def _length(self) -> int:
        if isinstance(self.tensors, tuple):
            return int(next(t for t in self.tensors if t is not None).shape[0])
        return int(self.tensors.shape[0])

    def cardinality(self) -> int:
        return self._length()

    def batch_size_is_static(self) -> bool:
        return True

    def has_deterministic_shuffle(self) -> bool:
        return False

    def shuffles(self) -> bool:
        return False

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        for row in range(self._length()):
            if isinstance(self.tensors, tuple):
                yield tuple(None if t is None else t[row] for t in self.tensors)
            else:
                yield self.tensors[row]


@dataclass(frozen=True, eq=False)
class _Shuffle(Dataset):
    parent: Dataset
    buffer_size: int
    seed: int | None

    def __post_init__(self) -> None:
        check_integer("shuffle buffer_size", self.buffer_size, minimum=1)
        if self.seed is not None:
            check_integer("shuffle seed", self.seed, minimum=0, maximum=None)

    def _parent(self) -> Dataset:
        return self.parent

    def cardinality(self) -> int:
        return self.parent.cardinality()

    def has_deterministic_shuffle(self) -> bool:
        return self.seed is not None or self.parent.has_deterministic_shuffle()

    def shuffles(self) -> bool:
        return True

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        rng = rngs.for_stage(self)
        buffer: list[Element] = []
        for element in self.parent._stream(rngs):
            buffer.append(element)
            if len(buffer) == self.buffer_size:
                yield buffer.pop(int(rng.integers(len(buffer))))
        while buffer:
            yield buffer.pop(int(rng.integers(len(buffer))))


@dataclass(frozen=True, eq=False)
class _Repeat(Dataset):
    parent: Dataset
    count: int | None

    def __post_init__(self) -> None:
        if self.count is not None:
            check_integer("repeat count", self.count, minimum=0)

    def _parent(self) -> Dataset:
        return self.parent

    def cardinality(self) -> int:
        inner = self.parent.cardinality()
        if self.count is None:
            return INFINITE if inner != 0 else 0
        if inner == INFINITE:
            return INFINITE if self.count > 0 else 0
        return inner * self.count

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        epoch = 0
        while self.count is None or epoch < self.count:
            produced = False
            for element in self.parent._stream(rngs):
                produced = True
                yield element
            if not produced:
                return
            epoch += 1


@dataclass(frozen=True, eq=False)
class _Batch(Dataset):
    parent: Dataset
    batch_size: int
    drop_remainder: bool

    def __post_init__(self) -> None:
        check_integer("batch_size", self.batch_size, minimum=1)

    def _parent(self) -> Dataset:
        return self.parent

    def cardinality(self) -> int:
        inner = self.parent.cardinality()
        if inner == INFINITE:
            return INFINITE
        full, remainder = divmod(inner, self.batch_size)
        return full if self.drop_remainder or remainder == 0 else full + 1

    def batch_size_is_static(self) -> bool:
        # Without drop_remainder the last batch may be short: the batch dimension is not fixed.
        return self.drop_remainder

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        pending: list[Element] = []
        for element in self.parent._stream(rngs):
            pending.append(element)
            if len(pending) == self.batch_size:
                yield stack(pending)
                pending = []
        if pending and not self.drop_remainder:
            yield stack(pending)


@dataclass(frozen=True, eq=False)
class _Map(Dataset):
    parent: Dataset
    fn: Callable[..., Element]

    def _parent(self) -> Dataset:
        return self.parent

    def cardinality(self) -> int:
        return self.parent.cardinality()

    def _stream(self, rngs: _StageRngs) -> Iterator[Element]:
        for element in self.parent._stream(rngs):
            yield self.fn(*element) if isinstance(element, tuple) else self.fn(element)


class DatasetIterator(DataPosition):
    """One run of a Dataset, with a checkpointable position."""

    def __init__(self, dataset: Dataset, seed_entropy: int | None = None) -> None:
        check_type("dataset", dataset, Dataset, "a Dataset")
        if seed_entropy is None:
            seed_entropy = secrets.randbits(128)
        self.dataset = dataset
        self.seed_entropy: int = check_integer("seed_entropy", seed_entropy, minimum=0, maximum=None)
        self.elements_produced: int = 0
        self._stream: Iterator[Element] = dataset._stream(_StageRngs(self.seed_entropy))

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Element:
        element = next(self._stream)
        self.elements_produced += 1
        return element

    @classmethod
    def restore(cls, dataset: Dataset, state: dict[str, int]) -> DatasetIterator:
        """An iterator over ``dataset`` positioned where the one that produced ``state`` was."""
        seed_entropy, elements_produced = data_position(state)
        iterator = cls(dataset, seed_entropy)
        for _ in range(elements_produced):
            try:
                next(iterator)
            except StopIteration as exc:
                raise InvalidInputError(
                    f"dataset runs out after {iterator.elements_produced} elements; cannot restore "
                    f"position {elements_produced}"
                ) from exc
        return iterator
