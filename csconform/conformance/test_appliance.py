"""Conformance checks of appliance mode (specs/appliance.yaml)."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.errors import ExecutionModeError, InvalidInputError

FEATURES, CLASSES, BATCH = 4, 3, 16


def make_dataset(engine, samples=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, samples)
    return engine.data.Dataset.from_tensor_slices((x, y)).repeat().batch(BATCH, drop_remainder=True)


def user_training_code(engine, appliance, steps=3, execution=None):
    """What a user writes: build a model, ask the appliance for a job, consume the losses."""
    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, 8), engine.nn.ReLU(), engine.nn.Linear(8, CLASSES))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    options = {} if execution is None else {"execution": execution}
    job = appliance.runner(model, engine.nn.cross_entropy, optimizer, **options)
    losses = [output.loss for output in job.train(make_dataset(engine), steps, data_seed=3)]
    return model, losses, job


def assert_close_weights(a, b):
    for (name, x), (_, y) in zip(sorted(a.state_dict().items()), sorted(b.state_dict().items()), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.spec("APPLIANCE-001")
def test_user_chooses_up_to_192_systems(engine):
    for count in (1, 2, 16, 192):
        assert engine.appliance.Appliance(count).num_systems == count
    for bad in (0, -1, 193, 1000, 2.0, True):
        with pytest.raises(InvalidInputError):
            engine.appliance.Appliance(bad)
    assert engine.appliance.Appliance(192).resources().systems == 192


@pytest.mark.spec("APPLIANCE-002")
def test_same_code_any_cluster_size(engine):
    reference, reference_losses, _ = user_training_code(engine, engine.appliance.Appliance(1))
    for count in (2, 4, 8):
        model, losses, job = user_training_code(engine, engine.appliance.Appliance(count))
        assert len(job.systems) == count
        assert_close_weights(model, reference)
        np.testing.assert_allclose(losses, reference_losses, rtol=1e-5)


@pytest.mark.spec("APPLIANCE-003")
def test_resources_assembled_from_the_system_count(engine):
    appliance = engine.appliance.Appliance(4)
    streaming = appliance.resources("weight_streaming")
    assert (streaming.systems, streaming.memoryx, streaming.swarmx) == (4, True, True)
    single = engine.appliance.Appliance(1).resources("pipelined")
    assert (single.systems, single.memoryx, single.swarmx) == (1, False, False)
    _model, _losses, job = user_training_code(engine, appliance)
    assert len(job.systems) == 4 and len({s.system_id for s in job.systems}) == 4
    assert {event.systems for event in job.executor.events} == {4}


@pytest.mark.spec("APPLIANCE-004")
def test_pipelined_or_weight_streaming_from_the_same_flow(engine):
    appliance = engine.appliance.Appliance(1)
    pipelined, pipelined_losses, job = user_training_code(engine, appliance, execution="pipelined")
    assert job.executor.mode == "pipelined"
    streamed, streamed_losses, job = user_training_code(engine, appliance, execution="weight_streaming")
    assert job.executor.mode == "weight_streaming"
    assert_close_weights(pipelined, streamed)
    np.testing.assert_allclose(pipelined_losses, streamed_losses, rtol=1e-5)
    with pytest.raises(ExecutionModeError, match="one wafer"):
        user_training_code(engine, engine.appliance.Appliance(4), execution="pipelined")


@pytest.mark.spec("APPLIANCE-005")
def test_cluster_used_as_a_single_device(engine):
    _m, single_losses, single_job = user_training_code(engine, engine.appliance.Appliance(1), steps=4)
    _m, cluster_losses, cluster_job = user_training_code(engine, engine.appliance.Appliance(8), steps=4)
    assert len(single_losses) == len(cluster_losses) == 4
    assert type(single_job) is type(cluster_job)
    assert single_job.steps_completed == cluster_job.steps_completed == 4


@pytest.mark.spec("APPLIANCE-006")
def test_default_mode_is_weight_streaming(engine):
    appliance = engine.appliance.Appliance(2)
    assert appliance.resources().execution == "weight_streaming"
    _model, _losses, job = user_training_code(engine, appliance)
    assert job.executor.mode == "weight_streaming"


@pytest.mark.spec("APPLIANCE-007")
def test_user_model_and_data_loader_stay_with_the_user(engine):
    appliance = engine.appliance.Appliance(2)
    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, CLASSES))
    weight_array = model.parameters()[0].data
    before = weight_array.copy()
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def cross_entropy(prediction, labels):  # the user's loss, watching the labels it is given
        seen.append(np.array(labels))
        return engine.nn.cross_entropy(prediction, labels)

    job = appliance.runner(model, cross_entropy, optimizer)
    dataset = make_dataset(engine)
    list(job.train(dataset, 2, data_seed=9))
    expected = dataset.iterator(seed_entropy=9)
    labels = np.concatenate([next(expected)[1] for _ in range(2)])
    assert np.array_equal(np.concatenate(seen), labels)
    assert model.parameters()[0].data is weight_array and not np.array_equal(before, weight_array)


@pytest.mark.spec("APPLIANCE-008")
def test_original_installation_single_system(engine):
    original = engine.appliance.Appliance(1, installation="original")
    assert original.default_execution() == "pipelined"
    _model, losses, job = user_training_code(engine, original)
    assert job.executor.mode == "pipelined" and len(losses) == 3
    with pytest.raises(ExecutionModeError, match="single"):
        engine.appliance.Appliance(2, installation="original")


@pytest.mark.spec("APPLIANCE-009")
def test_train_and_eval_loop_in_plain_python(engine):
    appliance = engine.appliance.Appliance(2)
    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, 8), engine.nn.ReLU(), engine.nn.Linear(8, CLASSES))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, 32)
    eval_data = engine.data.Dataset.from_tensor_slices((x, y)).batch(16, drop_remainder=True)
    train_job = appliance.runner(model, engine.nn.cross_entropy, optimizer)
    eval_losses = []
    for round_index in range(3):
        list(train_job.train(make_dataset(engine), 2 * (round_index + 1), data_seed=0))
        eval_job = appliance.runner(model, engine.nn.cross_entropy, mode="eval")
        eval_losses.append(eval_job.evaluate(eval_data))
        assert eval_job.systems[0].programs_loaded == 1
        expected = np.mean([float(engine.nn.cross_entropy(model(x[i : i + 16]), y[i : i + 16])) for i in (0, 16)])
        assert eval_losses[-1] == pytest.approx(expected, rel=1e-6)
    assert train_job.systems[0].programs_loaded == 1
    assert len(set(eval_losses)) == 3  # each evaluation saw newer weights


@pytest.mark.spec("APPLIANCE-010")
def test_single_device_code_runs_on_the_cluster(engine):
    engine.set_target("cpu")
    single_device, single_losses, _job = user_training_code(
        engine, engine.appliance.Appliance(1), execution="pipelined"
    )
    engine.set_target("cs")
    cluster, cluster_losses, job = user_training_code(engine, engine.appliance.Appliance(8))
    assert len(job.systems) == 8
    assert_close_weights(single_device, cluster)
    np.testing.assert_allclose(single_losses, cluster_losses, rtol=1e-5)
