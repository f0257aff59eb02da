"""Capability ``data``: the interface's tf.data-like Dataset, built from ``torch.utils.data`` stages.

cerebras.pytorch has no Dataset API of its own: a run is fed by a ``cstorch.utils.data.DataLoader``
around any iterable of torch tensors, usually a ``torch.utils.data`` pipeline (runner.py and
executor.py make that loader). So the adapter builds the interface's pipeline from torch's own
datapipe stages where torch has them: ``Shuffler`` (a buffer shuffle, as in tf.data), ``Batcher``
(``drop_last`` for ``drop_remainder``) and ``Mapper``. Torch has no repeat stage; ``repeat`` is a
small datapipe of the adapter's that iterates its input again. Elements stay NumPy inside the
pipeline, so map functions see NumPy, as the interface says.

A ``Dataset`` is a description; every ``iterator()`` builds fresh datapipes (a torch datapipe serves
one iterator at a time). Shuffles draw their seeds from NumPy generators: a shuffle with a seed from
that seed, one without from the iterator's ``seed_entropy``; each pass over a shuffle stage gets the
next seed. An iterator's state is its ``seed_entropy`` and torch's count of the elements its pipeline
produced; ``restore`` builds the pipeline again and has torch fast-forward it to that count
(:class:`DatasetIterator`). The runner hands that state to the package through a
``cstorch.utils.data.RestartableDataLoader`` (runner.py).
``cardinality()`` is the length torch's stages report.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data.datapipes.datapipe import IterDataPipe
from torch.utils.data.datapipes.iter import Batcher, IterableWrapper, Mapper, Shuffler
from torch.utils.data.datapipes.utils.snapshot import _simple_graph_snapshot_restoration

from csconform.arguments import check_callable, check_integer
from csconform.errors import InvalidInputError
from csconform.interface.kit.batching import stack
from csconform.interface.kit.checkpoint_sections import DataPosition, data_position

INFINITE = -1
"""The cardinality of a dataset that never runs out (``repeat()`` with ``count=None``)."""


class Dataset:
    """A pipeline description; build one with :meth:`from_tensor_slices`."""

    parent: Dataset
    """The stage this one transforms (every stage but the slices has one)."""

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset:
        return _Slices(tensors)

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Dataset:
        buffer_size = check_integer("shuffle buffer_size", buffer_size, minimum=1)
        if seed is not None:
            seed = check_integer("shuffle seed", seed, minimum=0, maximum=None)
        return _Shuffle(self, buffer_size, seed)

    def repeat(self, count: int | None = None) -> Dataset:
        return _Repeat(self, None if count is None else check_integer("repeat count", count, minimum=0))

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        return _Batch(self, check_integer("batch_size", batch_size, minimum=1), bool(drop_remainder))

    def map(self, fn: Callable[..., Any]) -> Dataset:
        return _Map(self, check_callable("map's fn", fn))

    def cardinality(self) -> int:
        try:
            return len(self.datapipe(_Seeds(0)))
        except TypeError:  # a stage without a length: an endless repeat
            return INFINITE

    def batch_size_is_static(self) -> bool:
        """True when every batch has one size: the last batch stage drops its remainder (or none batches)."""
        return self.parent.batch_size_is_static()

    def has_deterministic_shuffle(self) -> bool:
        return self.parent.has_deterministic_shuffle()

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        """The torch pipeline of one iterator run."""
        raise NotImplementedError

    def iterator(self, seed_entropy: int | None = None) -> DatasetIterator:
        return DatasetIterator(self, seed_entropy)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterator())


class _Seeds:
    """The seed generators of one iterator run, one per shuffle stage."""

    def __init__(self, seed_entropy: int) -> None:
        self.seed_entropy = seed_entropy
        self.unseeded_stages = 0

    def generator(self, seed: int | None) -> np.random.Generator:
        if seed is not None:
            return np.random.default_rng(np.random.SeedSequence(seed))
        sequence = np.random.SeedSequence(self.seed_entropy, spawn_key=(self.unseeded_stages,))
        self.unseeded_stages += 1
        return np.random.default_rng(sequence)


def _row_tuple(tensors: tuple[np.ndarray | None, ...], row: int) -> tuple[Any, ...]:
    return tuple(None if t is None else t[row] for t in tensors)


class _Slices(Dataset):
    def __init__(self, tensors: Any) -> None:
        if isinstance(tensors, tuple):
            arrays = tuple(None if t is None else np.asarray(t) for t in tensors)
            present = [a for a in arrays if a is not None]
            lengths = {a.shape[0] if a.ndim else None for a in present}
            if not present or None in lengths or len(lengths) != 1:
                raise InvalidInputError(
                    f"from_tensor_slices needs arrays with one shared first dimension; got {[a.shape for a in present]}"
                )
            self.tensors: Any = arrays
            self.length = int(present[0].shape[0])
        else:
            array = np.asarray(tensors)
            if array.ndim == 0:
                raise InvalidInputError("from_tensor_slices needs an array with at least one dimension")
            self.tensors = array
            self.length = int(array.shape[0])

    def batch_size_is_static(self) -> bool:
        return True

    def has_deterministic_shuffle(self) -> bool:
        return False

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        rows = IterableWrapper(range(self.length), deepcopy=False)
        if isinstance(self.tensors, tuple):
            tensors = self.tensors
            return Mapper(rows, lambda row: _row_tuple(tensors, row))
        array = self.tensors
        return Mapper(rows, lambda row: array[row])


class _SeededShuffler(IterDataPipe):
    """torch's ``Shuffler``, given the next seed of its stage's generator at each pass."""

    def __init__(self, source: IterDataPipe, buffer_size: int, generator: np.random.Generator) -> None:
        self.shuffler = Shuffler(source, buffer_size=buffer_size)
        self.generator = generator

    def __iter__(self) -> Iterator[Any]:
        self.shuffler.set_seed(int(self.generator.integers(2**62)))
        yield from self.shuffler

    def __len__(self) -> int:
        return len(self.shuffler)


@dataclass(eq=False)
class _Shuffle(Dataset):
    parent: Dataset
    buffer_size: int
    seed: int | None

    def has_deterministic_shuffle(self) -> bool:
        return self.seed is not None or self.parent.has_deterministic_shuffle()

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        source = self.parent.datapipe(seeds)
        return _SeededShuffler(source, self.buffer_size, seeds.generator(self.seed))


class _Repeated(IterDataPipe):
    """Its input again and again (``count`` times, or forever); an empty input stays empty."""

    def __init__(self, source: IterDataPipe, count: int | None) -> None:
        self.source = source
        self.count = count

    def __iter__(self) -> Iterator[Any]:
        passes = 0
        while self.count is None or passes < self.count:
            produced = False
            for element in self.source:
                produced = True
                yield element
            if not produced:
                return
            passes += 1

    def __len__(self) -> int:
        inner = len(self.source)
        if self.count is None:
            if inner == 0:
                return 0
            raise TypeError("an endless repeat has no length")
        return inner * self.count


@dataclass(eq=False)
class _Repeat(Dataset):
    parent: Dataset
    count: int | None

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        return _Repeated(self.parent.datapipe(seeds), self.count)


@dataclass(eq=False)
class _Batch(Dataset):
    parent: Dataset
    batch_size: int
    drop_remainder: bool

    def batch_size_is_static(self) -> bool:
        return self.drop_remainder

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        batches = Batcher(self.parent.datapipe(seeds), batch_size=self.batch_size, drop_last=self.drop_remainder)
        return Mapper(batches, lambda batch: stack(list(batch)))


@dataclass(eq=False)
class _Map(Dataset):
    parent: Dataset
    fn: Callable[..., Any]

    def datapipe(self, seeds: _Seeds) -> IterDataPipe:
        fn = self.fn
        return Mapper(self.parent.datapipe(seeds), lambda e: fn(*e) if isinstance(e, tuple) else fn(e))


class DatasetIterator(DataPosition):
    """One run of a Dataset's torch pipeline, whose position torch itself keeps and restores.

    The position is torch's own count of the samples the pipeline handed out
    (``IterDataPipe._number_of_samples_yielded``), and ``restore`` is torch's fast-forward of a
    datapipe graph (``torch.utils.data.datapipes.utils.snapshot``, the snapshot machinery of torch's
    data pipelines), applied to a pipeline built with the same ``seed_entropy``. A runner's loader
    hands this state to the package through its ``RestartableDataLoader`` protocol (runner.py).
    """

    def __init__(self, dataset: Dataset, seed_entropy: int | None = None) -> None:
        self.dataset = dataset
        self.seed_entropy = check_integer(
            "seed_entropy", secrets.randbits(128) if seed_entropy is None else seed_entropy, minimum=0, maximum=None
        )
        self.datapipe = dataset.datapipe(_Seeds(self.seed_entropy))
        self._elements: Iterator[Any] | None = None  # started on the first next(), or by restore()

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._elements is None:
            self._elements = iter(self.datapipe)
        return next(self._elements)

    @property
    def elements_produced(self) -> int:
        return int(self.datapipe._number_of_samples_yielded) if self._elements is not None else 0

    @classmethod
    def restore(cls, dataset: Any, state: Mapping[str, Any]) -> DatasetIterator:
        seed_entropy, elements_produced = data_position(state)
        iterator = cls(dataset, seed_entropy)
        # The shuffles take their seeds from seed_entropy (_SeededShuffler); torch's own seeding of
        # the graph, which the fast-forward also does, gets a generator of its own, so the global
        # torch random state stays untouched.
        generator = torch.Generator().manual_seed(seed_entropy % 2**63)
        try:
            _simple_graph_snapshot_restoration(iterator.datapipe, elements_produced, rng=generator)
        except RuntimeError as exc:
            raise InvalidInputError(
                f"dataset runs out before position {elements_produced}; cannot restore it ({exc})"
            ) from exc
        iterator._elements = iter(iterator.datapipe)  # torch's fast-forwarded iterator
        return iterator
