"""Unit tests of engine.data: argument checks, cardinality, shuffling streams and restore."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.engine import data
from csconform.errors import InvalidInputError


def test_bad_arguments_are_clear_errors():
    with pytest.raises(InvalidInputError, match="first dimension"):
        data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(InvalidInputError, match="at least one dimension"):
        data.Dataset.from_tensor_slices(np.float32(1.0))
    with pytest.raises(InvalidInputError, match="at least one array"):
        data.Dataset.from_tensor_slices((None,))
    base = data.Dataset.from_tensor_slices(np.arange(4))
    for bad in (0, -1, 1.5):
        with pytest.raises(InvalidInputError, match="buffer_size"):
            base.shuffle(bad)
        with pytest.raises(InvalidInputError, match="batch_size"):
            base.batch(bad)
    with pytest.raises(InvalidInputError, match="repeat"):
        base.repeat(-2)


def test_cardinality_of_pipelines():
    base = data.Dataset.from_tensor_slices(np.arange(10))
    assert base.repeat(0).cardinality() == 0
    assert base.repeat(0).repeat().cardinality() == 0
    assert base.repeat().repeat(3).cardinality() == data.INFINITE
    assert base.batch(3).cardinality() == 4
    assert base.batch(3, drop_remainder=True).cardinality() == 3
    assert base.map(lambda v: v * 2).shuffle(4).cardinality() == 10
    assert list(base.repeat(0)) == []


def test_static_properties():
    base = data.Dataset.from_tensor_slices(np.arange(10))
    assert base.batch_size_is_static() and not base.shuffles()
    assert not base.batch(3).batch_size_is_static()
    assert base.batch(3, drop_remainder=True).map(lambda b: b).batch_size_is_static()
    assert base.shuffle(3).repeat().shuffles() and not base.shuffle(3).has_deterministic_shuffle()
    assert base.shuffle(3, seed=1).repeat().has_deterministic_shuffle()


def test_unseeded_shuffles_differ_between_iterators_and_reshuffle_each_epoch():
    dataset = data.Dataset.from_tensor_slices(np.arange(50)).shuffle(50).repeat(2)
    first = [int(v) for v in dataset.iterator(seed_entropy=1)]
    second = [int(v) for v in dataset.iterator(seed_entropy=2)]
    assert first != second
    assert first[:50] != first[50:] and sorted(first[:50]) == sorted(first[50:]) == list(range(50))
    seeded = data.Dataset.from_tensor_slices(np.arange(50)).shuffle(50, seed=3)
    assert [int(v) for v in seeded.iterator(1)] == [int(v) for v in seeded.iterator(2)]


def test_none_labels_and_dict_elements_batch():
    features = np.arange(6, dtype=np.float32).reshape(3, 2)
    batches = list(data.Dataset.from_tensor_slices((features, None)).batch(2))
    assert batches[0][1] is None and np.array_equal(batches[0][0], features[:2])
    dicts = data.Dataset.from_tensor_slices(features).map(lambda f: ({"x": f}, f.sum())).batch(3)
    ((features_batch, sums),) = list(dicts)
    assert np.array_equal(features_batch["x"], features) and np.array_equal(sums, features.sum(axis=1))


def test_restore_refuses_bad_states():
    dataset = data.Dataset.from_tensor_slices(np.arange(3))
    with pytest.raises(InvalidInputError, match="runs out"):
        data.DatasetIterator.restore(dataset, {"seed_entropy": 0, "elements_produced": 5})
    with pytest.raises(InvalidInputError, match="not a dataset iterator state"):
        data.DatasetIterator.restore(dataset, {"position": 1})
