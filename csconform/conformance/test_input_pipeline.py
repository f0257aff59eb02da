"""Conformance checks of input functions and Datasets (specs/input_pipeline.yaml)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import UnsupportedTensorFlowError

FEATURES = 3
TF_CONFIG = {"TF_CONFIG": "{}"}
RETURN_PREFIX = "[Unsupported TensorFlow] Input function must return a"
BATCH_MESSAGE = (
    "[Unsupported TensorFlow] Inconsistent batch sizes detected. To ensure a fixed batch size across all "
    "steps, set `drop_remainder=True` when batching your Dataset in the input function."
)


def data(samples=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32)).astype(np.float32)


def make_estimator(engine, workers=1, params=None, seen=None):
    w = np.zeros(FEATURES, dtype=np.float32)

    def model_fn(features, labels, mode, params):
        if seen is not None:
            seen.append(np.array(features))
        labels = np.zeros(len(features), dtype=np.float32) if labels is None else labels
        error = features @ w - labels

        def train_op():
            w[:] -= 0.05 * 2 * features.T @ error / len(labels)

        return engine.estimator.EstimatorSpec(mode, loss=float(np.mean(error**2)), train_op=train_op)

    config = engine.estimator.CSRunConfig(num_input_workers=workers)
    params = {"batch_size": 8} if params is None else params
    return engine.estimator.CerebrasEstimator(model_fn, config=config, params=params, env=TF_CONFIG), w


def refused_before_training(estimator, w, input_fn, steps: int, match: str | None = None) -> Exception:
    """Training ``steps`` steps on ``input_fn`` is refused (UnsupportedTensorFlowError, its message
    matching ``match``) before the weights ``w`` change; returns the refusal."""
    with pytest.raises(UnsupportedTensorFlowError, match=match) as refused:
        estimator.train(input_fn, steps=steps)
    assert not np.any(w)
    return refused.value


def both_targets(engine, check):
    check(on_cs=True)
    engine.reset()
    engine.set_target("cpu")
    check(on_cs=False)


@pytest.mark.spec("INPUT-001")
def test_repeating_dataset_runs_the_requested_steps(engine):
    x, y = data(samples=20)

    def input_fn(params):
        dataset = engine.data.Dataset.from_tensor_slices((x, y))
        return dataset.shuffle(1000).repeat().batch(params["batch_size"], drop_remainder=True)

    estimator, _w = make_estimator(engine)
    result = estimator.train(input_fn, steps=25)  # 25 batches of 8 = 10 epochs of 20 samples
    assert result.steps_run == 25


@pytest.mark.spec("INPUT-002")
@pytest.mark.parametrize("count", [None, 1, 3], ids=["no-repeat", "repeat-1", "repeat-3"])
def test_finite_input_refused_on_cs_stops_early_on_cpu(engine, count):
    x, y = data(samples=16)

    def input_fn(params):
        dataset = engine.data.Dataset.from_tensor_slices((x, y)).shuffle(16)
        if count is not None:
            dataset = dataset.repeat(count)
        return dataset.batch(8, drop_remainder=True)

    available = 2 * (count or 1)

    def check(on_cs):
        estimator, w = make_estimator(engine)
        if on_cs:
            refused_before_training(estimator, w, input_fn, available + 1, match="repeat")
            assert estimator.train(input_fn, steps=available).steps_run == available
        else:
            assert estimator.train(input_fn, steps=available + 5).steps_run == available

    both_targets(engine, check)


@pytest.mark.spec("INPUT-003")
def test_workers_shuffle_differently(engine):
    x, y = data(samples=256)
    seen = []

    def input_fn(params):
        return engine.data.Dataset.from_tensor_slices((x, y)).shuffle(256).repeat().batch(8, drop_remainder=True)

    estimator, _w = make_estimator(engine, workers=4, seen=seen)
    estimator.train(input_fn, steps=8)
    first_batches = seen[-8:-4]  # the traced batches of steps 4..7 come from workers 0..3 in turn
    assert len(first_batches) == 4
    for i in range(4):
        for j in range(i + 1, 4):
            assert not np.array_equal(first_batches[i], first_batches[j])
    rows = {tuple(row) for batch in seen for row in batch}
    assert rows <= {tuple(row) for row in x}


@pytest.mark.spec("INPUT-004")
@pytest.mark.parametrize("seed", [7, None], ids=["fixed-seed", "no-shuffle"])
def test_identical_worker_streams_refused_on_cs(engine, seed):
    x, y = data()

    def input_fn(params):
        dataset = engine.data.Dataset.from_tensor_slices((x, y))
        if seed is not None:
            dataset = dataset.shuffle(64, seed=seed)
        return dataset.repeat().batch(8, drop_remainder=True)

    def check(on_cs):
        estimator, w = make_estimator(engine, workers=3)
        if on_cs:
            refused_before_training(estimator, w, input_fn, 3, match="shuffle")
            single, _w = make_estimator(engine, workers=1)
            assert single.train(input_fn, steps=3).steps_run == 3
        else:
            assert estimator.train(input_fn, steps=3).steps_run == 3

    both_targets(engine, check)


@pytest.mark.spec("INPUT-005")
def test_input_fn_must_return_a_dataset(engine):
    x, y = data()

    def tuple_input(params):
        return x[:8], y[:8]

    def check(on_cs):
        estimator, w = make_estimator(engine)
        if on_cs:
            assert str(refused_before_training(estimator, w, tuple_input, 2)).startswith(RETURN_PREFIX)
        else:
            assert estimator.train(tuple_input, steps=2).steps_run == 2

    both_targets(engine, check)


@pytest.mark.spec("INPUT-006")
def test_element_structure_features_tensor_labels_tensor_or_none(engine):
    x, y = data()
    shapes = {
        "dict-features": lambda: engine.data.Dataset.from_tensor_slices(x).map(lambda f: ({"x": f}, np.float32(0))),
        "single-array": lambda: engine.data.Dataset.from_tensor_slices(x),
        "triple": lambda: engine.data.Dataset.from_tensor_slices((x, y, y)),
    }

    def input_fn_returning(build):
        return lambda params: build().repeat().batch(8, drop_remainder=True)

    for name, build in shapes.items():
        estimator, _w = make_estimator(engine)
        with pytest.raises(UnsupportedTensorFlowError) as refused:
            estimator.train(input_fn_returning(build), steps=1)
        assert str(refused.value).startswith(RETURN_PREFIX), name
    estimator, _w = make_estimator(engine)
    no_labels = engine.data.Dataset.from_tensor_slices((x, None)).repeat().batch(8, drop_remainder=True)
    assert estimator.train(lambda params: no_labels, steps=2).steps_run == 2

    engine.set_target("cpu")
    seen = []

    def model_fn(features, labels, mode, params):  # a CPU model reading a feature dictionary
        seen.append((type(features).__name__, labels is None))
        return engine.estimator.EstimatorSpec(mode, loss=float(np.mean(features["x"])))

    estimator = engine.estimator.CerebrasEstimator(model_fn, params={}, env={})
    assert estimator.train(input_fn_returning(shapes["dict-features"]), steps=2).steps_run == 2
    assert seen[-1] == ("dict", False)
    single, _w = make_estimator(engine)
    assert single.train(input_fn_returning(shapes["single-array"]), steps=2).steps_run == 2


@pytest.mark.spec("INPUT-007")
def test_input_fn_takes_one_params_dict_on_cs(engine):
    x, y = data()

    def dataset():
        return engine.data.Dataset.from_tensor_slices((x, y)).shuffle(64).repeat().batch(8, drop_remainder=True)

    received = []

    def one_param(params):
        received.append(params)
        return dataset()

    def no_param():
        return dataset()

    def params_and_mode(params, mode):
        return dataset()

    def keyword_only(*, params):
        return dataset()

    estimator, _w = make_estimator(engine, params={"batch_size": 8, "tag": "mine"})
    assert estimator.train(one_param, steps=1).steps_run == 1
    assert received == [{"batch_size": 8, "tag": "mine"}]
    for input_fn in (no_param, params_and_mode, keyword_only):
        with pytest.raises(UnsupportedTensorFlowError, match="one parameter"):
            estimator.train(input_fn, steps=1)
    not_a_dict, _w = make_estimator(engine, params=[("batch_size", 8)])
    with pytest.raises(UnsupportedTensorFlowError, match="dictionary"):
        not_a_dict.train(one_param, steps=1)

    engine.set_target("cpu")
    estimator, _w = make_estimator(engine)
    for input_fn in (no_param, params_and_mode, keyword_only):
        assert estimator.train(input_fn, steps=1).steps_run == 1


@pytest.mark.spec("INPUT-008")
@pytest.mark.parametrize("samples", [64, 61], ids=["divides-evenly", "short-tail"])
def test_drop_remainder_required_on_cs(engine, samples):
    x, y = data(samples=samples)

    def input_fn(params):
        return engine.data.Dataset.from_tensor_slices((x, y)).shuffle(64).repeat(2).batch(8)

    def check(on_cs):
        seen = []
        estimator, w = make_estimator(engine, seen=seen)
        steps = -(-2 * samples // 8)
        if on_cs:
            assert str(refused_before_training(estimator, w, input_fn, steps)) == BATCH_MESSAGE
        else:
            assert estimator.train(input_fn, steps=steps).steps_run == steps
            assert {len(batch) for batch in seen} == ({8} if samples % 8 == 0 else {8, 2 * samples % 8})

    both_targets(engine, check)


@pytest.mark.spec("INPUT-009")
@given(samples=st.integers(1, 30), batch=st.integers(1, 8), drop=st.booleans(), repeats=st.integers(1, 3))
@settings(max_examples=30)
def test_dataset_api(engine, samples, batch, drop, repeats):
    x = np.arange(samples, dtype=np.float32)
    y = np.arange(samples) * 10
    plain = engine.data.Dataset.from_tensor_slices((x, y))
    assert [float(e[0]) for e in plain] == list(x) and plain.cardinality() == samples
    shuffled = plain.shuffle(5).repeat(repeats)
    elements = [(float(f), int(label)) for f, label in shuffled]
    for epoch in range(repeats):
        chunk = elements[epoch * samples : (epoch + 1) * samples]
        assert sorted(chunk) == [(float(i), int(i) * 10) for i in range(samples)]
    batched = plain.repeat(repeats).batch(batch, drop_remainder=drop)
    batches = list(batched)
    total = samples * repeats
    assert len(batches) == batched.cardinality() == (total // batch if drop else -(-total // batch))
    assert all(len(f) == batch for f, _ in batches[: total // batch])
    if not drop and total % batch:
        assert len(batches[-1][0]) == total % batch
    mapped = plain.map(lambda f, label: (f * 2, label + 1))
    assert [(float(f), int(label)) for f, label in mapped] == [(2.0 * i, 10 * i + 1) for i in range(samples)]
    assert plain.repeat().cardinality() == engine.data.INFINITE


@pytest.mark.spec("INPUT-010")
@given(consumed=st.integers(0, 30), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=20)
def test_iterator_state_restores_exactly(engine, consumed, seed):
    x = np.arange(13, dtype=np.float32)
    dataset = engine.data.Dataset.from_tensor_slices((x, x)).shuffle(6).repeat().batch(4, drop_remainder=True)
    original = dataset.iterator(seed_entropy=seed)
    for _ in range(consumed):
        next(original)
    restored = engine.data.DatasetIterator.restore(dataset, original.state())
    for _ in range(5):
        a, b = next(original), next(restored)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
