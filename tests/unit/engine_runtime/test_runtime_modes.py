"""Unit tests of the estimator configuration, metrics, execution helpers, appliance and runner arguments."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.engine import appliance, context, data, execution, metrics, nn, optim, runner
from csconform.engine.estimator_config import CSRunConfig
from csconform.engine.system import System
from csconform.errors import CheckpointError, ExecutionModeError, InvalidInputError


@pytest.fixture(autouse=True)
def fresh_engine():
    context.reset()
    yield
    context.reset()


def test_run_config_arguments():
    for bad in ({"num_input_workers": 0}, {"min_save_checkpoint_steps": 0}, {"save_checkpoint_steps": 0}):
        with pytest.raises(InvalidInputError):
            CSRunConfig(**bad)
    assert "save_checkpoint_secs" in CSRunConfig.parameter_names()
    context.set_target("cpu")
    CSRunConfig(save_checkpoint_secs=1).check_for_system(env={})  # nothing applies on cpu


def test_metric_argument_errors():
    with pytest.raises(InvalidInputError, match="shape"):
        metrics.Accuracy().update(np.zeros(3), np.zeros(4))
    with pytest.raises(InvalidInputError, match="zero"):
        metrics.Accuracy().compute()
    with pytest.raises(InvalidInputError, match="zero"):
        metrics.Mean().compute()
    assert metrics.is_single_value(np.float32(1)) and metrics.is_single_value(np.ones((1, 1)))
    assert not metrics.is_single_value([1.0]) and not metrics.is_single_value(np.ones(2))


def test_footprint_and_optimizer_slots():
    footprint = execution.Footprint(parameters=10, activation_elements_per_sample=3, largest_layer_parameters=4)
    assert footprint.on_chip_bytes(2) == 10 * 4 * 4 + 3 * 2 * 2
    assert footprint.streaming_bytes(2) == 4 * 4 * 2 + 3 * 2 * 2
    model = nn.Sequential(nn.Linear(2, 2))
    assert execution.optimizer_slots(optim.SGD(model.parameters(), lr=0.1)) == 1
    assert execution.optimizer_slots(optim.Adam(model.parameters(), lr=0.1)) == 2


def test_weight_streaming_needs_systems_and_labels_may_be_none():
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(InvalidInputError, match="at least one"):
        execution.WeightStreamingExecutor(model, [])
    executor = execution.WeightStreamingExecutor(model, [System("a"), System("b")])
    assert executor.shard(None) == [None, None]
    with pytest.raises(InvalidInputError, match="divisible"):
        executor.shard(np.float32(1.0))


def test_appliance_resources_and_unknown_execution():
    resources = appliance.Appliance(3).resources("pipelined")
    assert resources.systems == 1 and not resources.memoryx
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(InvalidInputError, match="execution"):
        runner.Runner(model, nn.mse_loss, optim.SGD(model.parameters(), lr=0.1), execution="sideways")


def test_runner_arguments():
    model = nn.Sequential(nn.Linear(2, 2))
    sgd = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(InvalidInputError, match="optimizer"):
        runner.Runner(model, nn.mse_loss)
    with pytest.raises(InvalidInputError, match="checkpoint_dir"):
        runner.Runner(model, nn.mse_loss, sgd, checkpoint_steps=2)
    with pytest.raises(InvalidInputError, match="checkpoint_steps"):
        runner.Runner(model, nn.mse_loss, sgd, checkpoint_steps=0, checkpoint_dir=".")
    with pytest.raises(InvalidInputError, match="system ids"):
        runner.Runner(model, nn.mse_loss, sgd, num_systems=2, system_ids=["a"], execution="weight_streaming")
    dataset = data.Dataset.from_tensor_slices((np.ones((4, 2), np.float32), np.ones((4, 2), np.float32))).batch(2)
    with pytest.raises(InvalidInputError, match="steps"):
        runner.Runner(model, nn.mse_loss, sgd).train(dataset, 0)
    with pytest.raises(ExecutionModeError, match="eval"):
        runner.Runner(model, nn.mse_loss, mode="eval").train(dataset, 1)


def test_restore_into_a_different_model_is_a_checkpoint_error(tmp_path):
    dataset = (
        data.Dataset.from_tensor_slices((np.ones((4, 2), np.float32), np.ones((4, 2), np.float32))).repeat().batch(2)
    )
    model = nn.Sequential(nn.Linear(2, 2))
    first = runner.Runner(
        model, nn.mse_loss, optim.SGD(model.parameters(), lr=0.1), checkpoint_steps=1, checkpoint_dir=tmp_path
    )
    path = next(first.train(dataset, 1)).checkpoint
    other_model = nn.Sequential(nn.Linear(2, 3))
    other = runner.Runner(other_model, nn.mse_loss, optim.SGD(other_model.parameters(), lr=0.1))
    with pytest.raises(CheckpointError, match="does not match"):
        list(other.train(dataset, 2, resume_from=path))


def test_weight_streaming_dropout_draws_from_the_layer_stream():
    def run(executor_for):
        nn.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5, seed=1), nn.Linear(8, 2))
        executor = executor_for(model)
        x = np.ones((4, 3), dtype=np.float32)
        grads = []
        for _ in range(2):
            model.zero_grad()
            executor.forward_backward(x, np.zeros((4, 2), np.float32), nn.mse_loss, 1.0)
            grads.append(model.parameters()[0].grad.copy())
        return grads

    pipelined = run(lambda m: execution.PipelinedExecutor(m, System("a")))
    streamed = run(lambda m: execution.WeightStreamingExecutor(m, [System("a")]))
    assert not np.array_equal(streamed[0], streamed[1])  # a new mask each step
    for a, b in zip(pipelined, streamed, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
