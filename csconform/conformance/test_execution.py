"""Conformance checks of pipelined and weight-streaming execution (specs/execution.yaml)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import CapacityError, ExecutionModeError, InvalidInputError

pytestmark = pytest.mark.capability("execution")  # runs take execution options only this capability offers

FEATURES, HIDDEN, CLASSES = 5, 7, 3
GB = 10**9


def make_model(engine, seed=0):
    engine.nn.manual_seed(seed)
    return engine.nn.Sequential(engine.nn.Linear(FEATURES, HIDDEN), engine.nn.ReLU(), engine.nn.Linear(HIDDEN, CLASSES))


def batch_of(size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((size, FEATURES)).astype(np.float32), rng.integers(0, CLASSES, size)


def make_dataset(engine, samples=48, batch=12):
    x, y = batch_of(samples)
    return engine.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch, drop_remainder=True)


def streaming(engine, model, systems, installation="appliance"):
    return engine.execution.WeightStreamingExecutor(
        model, [engine.compiler.System(f"cs-{i}", installation=installation) for i in range(systems)]
    )


def gradients(model):
    return [p.grad.copy() for p in model.parameters()]


@pytest.mark.spec("EXEC-001")
def test_model_too_large_for_pipelined_refused_on_cs(engine):
    wse2 = engine.compiler.System("cs-0", wafer="WSE-2")
    fits = engine.execution.Footprint(
        parameters=1 * GB, activation_elements_per_sample=10**6, optimizer_slots_per_weight=2
    )
    too_large = engine.execution.Footprint(
        parameters=3 * GB, activation_elements_per_sample=10**6, optimizer_slots_per_weight=2
    )
    engine.execution.check_pipelined_fits(fits, 32, wse2)  # 16 GB + 64 MB
    with pytest.raises(CapacityError, match="weight streaming"):
        engine.execution.check_pipelined_fits(too_large, 32, wse2)  # 48 GB
    medium = engine.execution.Footprint(parameters=int(1.2 * GB), activation_elements_per_sample=0)
    engine.execution.check_pipelined_fits(medium, 32, wse2)  # 19.2 GB
    with pytest.raises(CapacityError, match="18 GB"):
        engine.execution.check_pipelined_fits(medium, 32, engine.compiler.System("cs-1", wafer="WSE-1"))
    engine.execution.check_pipelined_fits(
        engine.execution.Footprint(parameters=int(2.7 * GB), activation_elements_per_sample=0),
        1,
        engine.compiler.System("cs-3", wafer="WSE-3"),
    )
    engine.set_target("cpu")
    engine.execution.check_pipelined_fits(too_large, 32, wse2)


@pytest.mark.spec("EXEC-002")
def test_footprint_formula_and_measurement(engine):
    footprint = engine.execution.Footprint(
        parameters=1000, activation_elements_per_sample=50, optimizer_slots_per_weight=1
    )
    assert footprint.on_chip_bytes(batch_size=8) == 1000 * 4 * 3 + 50 * 8 * 2
    model = make_model(engine)
    optimizer = engine.optim.Adam(model.parameters(), lr=1e-3)
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, optimizer)
    next(runner.train(make_dataset(engine, batch=12), 1))
    measured = engine.execution.footprint_of(model, runner.artifact.graph, 12, optimizer)
    assert measured.parameters == FEATURES * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES
    assert measured.optimizer_slots_per_weight == 2
    # inputs read by linear, relu, linear and the loss's logits, per sample
    assert measured.activation_elements_per_sample == FEATURES + HIDDEN + HIDDEN + CLASSES
    sgd = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    assert engine.execution.footprint_of(model, runner.artifact.graph, 12, sgd).optimizer_slots_per_weight == 1


@pytest.mark.spec("EXEC-003")
def test_original_installation_runs_pipelined_only(engine):
    model = make_model(engine)
    with pytest.raises(ExecutionModeError, match="pipelined"):
        streaming(engine, model, 1, installation="original")
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ExecutionModeError):
        engine.runner.Runner(
            model, engine.nn.cross_entropy, optimizer, execution="weight_streaming", installation="original"
        )
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, optimizer, installation="original")
    assert len(list(runner.train(make_dataset(engine), 2))) == 2
    engine.set_target("cpu")
    runner = engine.runner.Runner(
        model, engine.nn.cross_entropy, optimizer, execution="weight_streaming", installation="original"
    )
    assert len(list(runner.train(make_dataset(engine), 2))) == 2


@pytest.mark.spec("EXEC-004")
def test_pipelined_loads_the_whole_network_on_one_system(engine):
    model = make_model(engine)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, optimizer)
    assert len(runner.systems) == 1
    outputs = runner.train(make_dataset(engine), 4)
    next(outputs)
    program = runner.systems[0].program
    assert program.graph.op_names()[:3] == ("linear", "relu", "linear")
    list(outputs)
    assert runner.systems[0].program is program and runner.systems[0].programs_loaded == 1
    with pytest.raises(ExecutionModeError, match="one"):
        engine.runner.Runner(model, engine.nn.cross_entropy, optimizer, execution="pipelined", num_systems=2)


@pytest.mark.spec("EXEC-005")
@pytest.mark.parametrize("systems", [1, 3])
def test_layers_streamed_forward_then_reverse(engine, systems):
    model = make_model(engine)
    executor = streaming(engine, model, systems)
    x, y = batch_of(6)
    executor.forward_backward(x, y, engine.nn.cross_entropy, 1.0)
    executor.apply_update(lambda: None)
    order = [(event.kind, event.layer) for event in executor.events]
    layers = range(3)
    expected = [("broadcast_forward", i) for i in layers]
    for i in reversed(layers):
        expected += [("broadcast_backward", i), ("reduce", i)]
    expected.append(("update", None))
    assert order == expected


@pytest.mark.spec("EXEC-006")
@given(systems=st.integers(1, 8), per_system=st.integers(1, 4))
@settings(max_examples=15)
def test_batch_sharded_and_weights_broadcast_to_every_system(engine, systems, per_system):
    engine.reset()
    executor = streaming(engine, make_model(engine), systems)
    x, y = batch_of(systems * per_system)
    shards = executor.shard(x)
    assert len(shards) == systems and all(len(s) == per_system for s in shards)
    assert np.array_equal(np.concatenate(shards), x)
    executor.forward_backward(x, y, engine.nn.cross_entropy, 1.0)
    assert all(event.systems == systems for event in executor.events)


@pytest.mark.spec("EXEC-007")
def test_swarmx_sums_gradients_and_memoryx_updates_once(engine):
    parts = [np.full(3, v, dtype=np.float32) for v in (0.1, 0.2, 0.3)]
    total = engine.execution.SwarmX.reduce(parts)
    expected = np.float32(0.1) + np.float32(0.2)
    expected = np.full(3, expected + np.float32(0.3), dtype=np.float32)
    assert total.dtype == np.float32 and np.array_equal(total, expected)

    systems = 4
    model = make_model(engine)
    x, y = batch_of(8)
    executor = streaming(engine, model, systems)
    executor.forward_backward(x, y, engine.nn.cross_entropy, 1.0)
    by_cluster = gradients(model)
    summed = [np.zeros_like(g) for g in by_cluster]
    for shard in range(systems):
        replica = make_model(engine)
        rows = slice(2 * shard, 2 * shard + 2)
        engine.execution.PipelinedExecutor(replica, engine.compiler.System("cs-x")).forward_backward(
            x[rows], y[rows], engine.nn.cross_entropy, 1.0 / systems
        )
        summed = [s + g for s, g in zip(summed, gradients(replica), strict=True)]
    for cluster, expected_sum in zip(by_cluster, summed, strict=True):
        np.testing.assert_allclose(cluster, expected_sum, rtol=1e-6, atol=1e-7)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    executor.apply_update(optimizer.step)
    kinds = [event.kind for event in executor.events]
    assert kinds.count("update") == 1 and kinds[-1] == "update"
    assert optimizer.global_step == 1


def assert_close_to_full_batch(cluster_grads, full_grads):
    for cluster, full in zip(cluster_grads, full_grads, strict=True):
        scale = float(np.max(np.abs(full))) or 1.0
        np.testing.assert_allclose(cluster, full, rtol=0, atol=1e-5 * scale)


@pytest.mark.spec("EXEC-008")
@given(systems=st.integers(1, 16), per_system=st.integers(1, 3), seed=st.integers(0, 10**6))
@settings(max_examples=20)
def test_n_systems_match_one_system_on_full_batch(engine, systems, per_system, seed):
    engine.reset()
    x, y = batch_of(systems * per_system, seed)
    single = make_model(engine)
    engine.execution.PipelinedExecutor(single, engine.compiler.System("cs-0")).forward_backward(
        x, y, engine.nn.cross_entropy, 1.0
    )
    cluster = make_model(engine)
    streaming(engine, cluster, systems).forward_backward(x, y, engine.nn.cross_entropy, 1.0)
    assert_close_to_full_batch(gradients(cluster), gradients(single))
    for model in (single, cluster):
        engine.optim.SGD(model.parameters(), lr=0.5).step()
    for a, b in zip(single.parameters(), cluster.parameters(), strict=True):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-6, atol=1e-6)


@pytest.mark.spec("EXEC-009")
def test_indivisible_batch_refused(engine):
    model = make_model(engine)
    before = [p.data.copy() for p in model.parameters()]
    executor = streaming(engine, model, 4)
    x, y = batch_of(10)
    with pytest.raises(InvalidInputError, match="divisible"):
        executor.forward_backward(x, y, engine.nn.cross_entropy, 1.0)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    runner = engine.runner.Runner(
        model, engine.nn.cross_entropy, optimizer, execution="weight_streaming", num_systems=4
    )
    with pytest.raises(InvalidInputError, match="divisible"):
        list(runner.train(make_dataset(engine, samples=40, batch=10), 2))
    assert all(np.array_equal(a, p.data) for a, p in zip(before, model.parameters(), strict=True))


@pytest.mark.spec("EXEC-010")
def test_weight_streaming_fits_models_larger_than_the_wafer(engine):
    wse2 = engine.compiler.System("cs-0")
    huge = engine.execution.Footprint(
        parameters=20 * GB,
        activation_elements_per_sample=10**6,
        optimizer_slots_per_weight=2,
        largest_layer_parameters=GB // 2,
    )
    with pytest.raises(CapacityError):
        engine.execution.check_pipelined_fits(huge, 16, wse2)
    engine.execution.check_weight_streaming_fits(huge, 16, wse2)
    giant_layer = engine.execution.Footprint(
        parameters=20 * GB, activation_elements_per_sample=10**6, largest_layer_parameters=6 * GB
    )
    with pytest.raises(CapacityError):
        engine.execution.check_weight_streaming_fits(giant_layer, 16, wse2)


@pytest.mark.spec("EXEC-011")
@pytest.mark.parametrize("optimizer_name", ["Adam", "SGD"])
def test_learning_algorithm_runs_in_memoryx(engine, optimizer_name):
    def run(execution, systems):
        model = make_model(engine)
        if optimizer_name == "Adam":
            optimizer = engine.optim.Adam(model.parameters(), lr=1e-2)
        else:
            optimizer = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        scaler = engine.amp.GradScaler(loss_scale="dynamic")
        runner = engine.runner.Runner(
            model, engine.nn.cross_entropy, optimizer, grad_scaler=scaler, execution=execution, num_systems=systems
        )
        losses = [o.loss for o in runner.train(make_dataset(engine), 4, data_seed=0)]
        return model, optimizer, losses, runner

    single, single_opt, single_losses, _ = run("pipelined", 1)
    cluster, cluster_opt, cluster_losses, runner = run("weight_streaming", 4)
    assert [e.kind for e in runner.executor.events].count("update") == 4
    assert cluster_opt.global_step == single_opt.global_step == 4
    np.testing.assert_allclose(cluster_losses, single_losses, rtol=1e-5)
    for a, b in zip(single.parameters(), cluster.parameters(), strict=True):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-4, atol=1e-5)


@pytest.mark.spec("EXEC-012")
def test_fc_mnist_example_trains_pipelined(engine):
    engine.nn.manual_seed(0)
    model = engine.nn.fc_mnist(hidden=32)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    runner = engine.runner.Runner(model, engine.nn.cross_entropy, optimizer)
    rng = np.random.default_rng(0)
    images = rng.random((16, 784)).astype(np.float32)
    digits = rng.integers(0, 10, 16)
    dataset = engine.data.Dataset.from_tensor_slices((images, digits)).repeat().batch(16, drop_remainder=True)
    losses = [output.loss for output in runner.train(dataset, 8)]
    assert runner.artifact.graph.op_names() == ("linear", "relu", "linear", "relu", "linear", "cross_entropy")
    assert len(runner.systems) == 1 and runner.systems[0].programs_loaded == 1
    assert losses[-1] < losses[0]
