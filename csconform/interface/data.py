"""Capability ``data``: the input pipeline (estimator-limitations#Input function differences).

A dataset yields ``(features, labels)`` batches of NumPy arrays; the CS system needs fixed batch
sizes (``drop_remainder=True``) and repeating datasets; an iterator can say where it stands, so a
run resumes on the next batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol


class DatasetIterator(Protocol):
    def __iter__(self) -> Iterator[Any]: ...

    def __next__(self) -> Any: ...

    def state(self) -> Mapping[str, Any]:
        """Where the iterator stands, enough to restore it on the same dataset."""

    @classmethod
    def restore(cls, dataset: Any, state: Mapping[str, Any]) -> DatasetIterator:
        """An iterator over ``dataset`` that yields exactly what the one that gave ``state`` would
        have yielded next."""


class Dataset(Protocol):
    """``engine.data.Dataset``: a tf.data-like pipeline."""

    @staticmethod
    def from_tensor_slices(tensors: Any) -> Dataset: ...

    def shuffle(self, buffer_size: int, seed: int | None = None) -> Dataset: ...

    def repeat(self, count: int | None = None) -> Dataset: ...

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset: ...

    def map(self, fn: Callable[..., Any]) -> Dataset: ...

    def cardinality(self) -> int:
        """Number of elements, ``INFINITE`` for a repeated dataset."""

    def batch_size_is_static(self) -> bool: ...

    def has_deterministic_shuffle(self) -> bool: ...

    def iterator(self, seed_entropy: int | None = None) -> DatasetIterator: ...

    def __iter__(self) -> Iterator[Any]: ...


class DataModule(Protocol):
    """``engine.data``"""

    Dataset: type[Dataset]
    DatasetIterator: type[DatasetIterator]
    INFINITE: int
