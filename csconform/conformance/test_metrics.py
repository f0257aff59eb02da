"""Conformance checks of eval metrics (specs/metrics.yaml): one final value on the CS system."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import MetricError


def several_values_metric(engine, result):
    class Several(engine.metrics.Metric):
        name = "several"

        def update(self, *batch):
            pass

        def compute(self):
            return result

    return Several()


SEVERAL = [(0.5, 0.25), [1.0, 2.0], {"precision": 0.5, "recall": 0.75}, np.array([0.1, 0.2])]


@pytest.mark.spec("METRICS-001")
@pytest.mark.parametrize("result", SEVERAL, ids=["tuple", "list", "dict", "array"])
def test_several_values_refused_on_cs(engine, result):
    with pytest.raises(MetricError, match="single"):
        engine.metrics.evaluate(several_values_metric(engine, result), [(np.zeros(2),)])


@pytest.mark.spec("METRICS-001")
@pytest.mark.parametrize("result", SEVERAL, ids=["tuple", "list", "dict", "array"])
def test_several_values_returned_on_cpu(engine, result):
    engine.set_target("cpu")
    returned = engine.metrics.evaluate(several_values_metric(engine, result), [(np.zeros(2),)])
    if isinstance(result, np.ndarray):
        assert np.array_equal(returned, result)
    else:
        assert returned == result


@pytest.mark.spec("METRICS-002")
def test_intermediate_state_refused_on_cs_available_on_cpu(engine):
    metric = engine.metrics.Accuracy()
    metric.update(np.array([0, 1, 1]), np.array([0, 1, 0]))
    with pytest.raises(MetricError, match="intermediate"):
        metric.state()
    engine.set_target("cpu")
    state = metric.state()
    assert state["correct"] == 2 and state["total"] == 3


@pytest.mark.spec("METRICS-003")
@given(
    labels=st.lists(st.integers(0, 3), min_size=1, max_size=40),
    seed=st.integers(0, 2**16),
    batch=st.integers(1, 7),
)
@settings(max_examples=25)
def test_single_final_value_over_all_batches(engine, labels, seed, batch):
    engine.reset()
    rng = np.random.default_rng(seed)
    labels = np.array(labels)
    logits = rng.standard_normal((len(labels), 4))
    batches = [(logits[i : i + batch], labels[i : i + batch]) for i in range(0, len(labels), batch)]
    accuracy = engine.metrics.evaluate(engine.metrics.Accuracy(), batches)
    assert isinstance(accuracy, float)
    assert accuracy == pytest.approx(np.mean(logits.argmax(axis=1) == labels))
    values = [(logits[i : i + batch, 0],) for i in range(0, len(labels), batch)]
    mean = engine.metrics.evaluate(engine.metrics.Mean(), values)
    assert isinstance(mean, float) and mean == pytest.approx(logits[:, 0].mean())
    one_element = engine.metrics.evaluate(several_values_metric(engine, np.array([0.5])), [(np.zeros(1),)])
    assert one_element == 0.5


def eval_runner(engine):
    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(4, 3))
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, mode="eval")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((12, 4)).astype(np.float32)
    y = rng.integers(0, 3, 12)
    dataset = engine.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)
    return model, runner, dataset, x, y


@pytest.mark.spec("METRICS-004")
def test_eval_run_returns_one_final_value(engine):
    model, runner, dataset, x, y = eval_runner(engine)
    mean_loss = runner.evaluate(dataset)
    expected = np.mean([float(engine.nn.cross_entropy(model(x[i : i + 4]), y[i : i + 4])) for i in (0, 4, 8)])
    assert isinstance(mean_loss, float) and mean_loss == pytest.approx(expected, rel=1e-6)
    accuracy = runner.evaluate(dataset, engine.metrics.Accuracy())
    assert accuracy == pytest.approx(np.mean(model(x).argmax(axis=1) == y))
    engine.set_target("cpu")
    assert runner.evaluate(dataset, several_values_metric(engine, (1.0, 2.0))) == (1.0, 2.0)


@pytest.mark.spec("METRICS-004")
def test_eval_run_refuses_several_values_on_cs(engine):
    engine.set_target("cs")  # the refusal is the CS system's (METRICS-001), here through an eval run
    _model, runner, dataset, _x, _y = eval_runner(engine)
    with pytest.raises(MetricError):
        runner.evaluate(dataset, several_values_metric(engine, (1.0, 2.0)))
