"""Conformance checks of static graphs and run modes (specs/static_graph.yaml).

Every limitation is checked both ways: refused on target cs, accepted on target cpu.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import ExecutionModeError, InvalidInputError, StaticGraphError

FEATURES, CLASSES = 4, 3


def make_runner(engine, **options):
    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, 5), engine.nn.ReLU(), engine.nn.Linear(5, CLASSES))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05)
    return model, engine.runner.Runner(model, engine.nn.cross_entropy, optimizer, **options)


def make_dataset(engine, batch=4, samples=32, dtype=np.float32, drop_remainder=True, repeat=True):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, FEATURES)).astype(dtype)
    y = rng.integers(0, CLASSES, samples)
    dataset = engine.data.Dataset.from_tensor_slices((x, y))
    if repeat:
        dataset = dataset.repeat()
    return dataset.batch(batch, drop_remainder=drop_remainder)


def train(runner, dataset, steps):
    return [output.loss for output in runner.train(dataset, steps)]


def weights(model):
    return {name: value.copy() for name, value in model.state_dict().items()}


def assert_refused_without_update(engine, model, runner, dataset, steps):
    before = weights(model)
    with pytest.raises(StaticGraphError, match="changed"):
        train(runner, dataset, steps)
    after = weights(model)
    assert all(np.array_equal(before[name], after[name]) for name in before)


@pytest.mark.spec("GRAPH-001")
def test_shape_change_refused_on_cs(engine):
    model, runner = make_runner(engine)
    train(runner, make_dataset(engine, batch=4), 2)
    assert_refused_without_update(engine, model, runner, make_dataset(engine, batch=2), 3)
    assert runner.steps_completed == 2


@pytest.mark.spec("GRAPH-001")
def test_shape_change_recompiled_on_cpu(engine):
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine, batch=4), 2)
    losses = train(runner, make_dataset(engine, batch=2), 4)
    assert len(losses) == 2 and np.all(np.isfinite(losses))
    assert runner.compiles == 2


@pytest.mark.spec("GRAPH-001")
def test_short_last_batch_is_a_shape_change(engine):
    model, runner = make_runner(engine)
    short_tail = make_dataset(engine, batch=4, samples=10, drop_remainder=False, repeat=False)
    before = weights(model)
    with pytest.raises(StaticGraphError):
        train(runner, short_tail, 3)
    assert runner.steps_completed == 2
    assert not np.array_equal(before["layers.0.weight"], model.state_dict()["layers.0.weight"])
    engine.reset()
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    assert len(train(runner, short_tail, 3)) == 3


@pytest.mark.spec("GRAPH-002")
def test_dtype_change_refused_on_cs_accepted_on_cpu(engine):
    model, runner = make_runner(engine)
    train(runner, make_dataset(engine, dtype=np.float32), 2)
    assert_refused_without_update(engine, model, runner, make_dataset(engine, dtype=np.float64), 3)

    engine.reset()
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine, dtype=np.float32), 2)
    assert len(train(runner, make_dataset(engine, dtype=np.float64), 3)) == 1
    assert runner.compiles == 2


def branching_model(engine):
    """A model whose forward pass takes another Python branch when ``use_head`` is switched on."""

    class Branchy(engine.nn.Module):
        def __init__(self):
            self.body = engine.nn.Linear(FEATURES, CLASSES)
            self.head = engine.nn.Sequential(engine.nn.ReLU(), engine.nn.Linear(CLASSES, CLASSES))
            self.use_head = False

        def forward(self, x):
            self._path = [self.body, self.head] if self.use_head else [self.body]
            for layer in self._path:
                x = layer(x)
            return x

        def backward(self, grad):
            for layer in reversed(self._path):
                grad = layer.backward(grad)
            return grad

    engine.nn.manual_seed(0)
    model = Branchy()
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05)
    return model, engine.runner.Runner(model, engine.nn.cross_entropy, optimizer)


@pytest.mark.spec("GRAPH-003")
def test_control_flow_changing_the_graph_refused_on_cs(engine):
    model, runner = branching_model(engine)
    train(runner, make_dataset(engine), 2)
    model.use_head = True
    assert_refused_without_update(engine, model, runner, make_dataset(engine), 3)


@pytest.mark.spec("GRAPH-003")
def test_control_flow_changing_the_graph_accepted_on_cpu(engine):
    engine.set_target("cpu")
    model, runner = branching_model(engine)
    train(runner, make_dataset(engine), 2)
    model.use_head = True
    assert len(train(runner, make_dataset(engine), 4)) == 2
    assert runner.compiles == 2
    assert "relu" in runner.artifact.graph.op_names()


def small_graph(engine, batch=4):
    x = np.zeros((batch, FEATURES), dtype=np.float32)
    graph, _ = engine.graph.trace(lambda: engine.graph.record("linear", x))
    return graph


@pytest.mark.spec("GRAPH-004")
def test_second_programming_refused_on_cs(engine):
    system = engine.compiler.System("cs-0")
    engine.compiler.compile_graph(small_graph(engine), system=system)
    with pytest.raises(StaticGraphError, match="reprogrammed"):
        engine.compiler.compile_graph(small_graph(engine, batch=8), system=system)
    assert system.programs_loaded == 1
    assert system.program.graph == small_graph(engine)


@pytest.mark.spec("GRAPH-004")
def test_second_programming_accepted_on_cpu(engine):
    engine.set_target("cpu")
    system = engine.compiler.System("cs-0")
    engine.compiler.compile_graph(small_graph(engine), system=system)
    engine.compiler.compile_graph(small_graph(engine, batch=8), system=system)
    assert system.programs_loaded == 2
    assert system.program.graph == small_graph(engine, batch=8)


@pytest.mark.spec("GRAPH-005")
def test_train_and_eval_refused_on_cs_with_reason(engine):
    with pytest.raises(ExecutionModeError, match="cannot be reprogrammed for eval"):
        engine.compiler.compile_graph(small_graph(engine), mode="train_and_eval", system_id="cs-0", compile_only=True)
    with pytest.raises(ExecutionModeError, match="train_and_eval"):
        make_runner(engine, mode="train_and_eval")


@pytest.mark.spec("GRAPH-005")
def test_train_and_eval_accepted_on_cpu(engine):
    engine.set_target("cpu")
    artifact = engine.compiler.compile_graph(
        small_graph(engine), mode="train_and_eval", system_id="cs-0", compile_only=True
    )
    assert artifact.mode == "train_and_eval"
    _model, runner = make_runner(engine, mode="train_and_eval")
    assert len(train(runner, make_dataset(engine), 2)) == 2
    assert np.isfinite(runner.evaluate(make_dataset(engine, repeat=False)))


@pytest.mark.spec("GRAPH-006")
def test_train_and_eval_modes_supported_others_unknown(engine):
    for mode in ("train", "eval"):
        artifact = engine.compiler.compile_graph(small_graph(engine), mode=mode, system_id="cs-0", compile_only=True)
        assert artifact.mode == mode
    with pytest.raises(InvalidInputError, match="train"):
        engine.compiler.compile_graph(small_graph(engine), mode="predict", system_id="cs-0", compile_only=True)
    _model, runner = make_runner(engine, mode="eval")
    assert np.isfinite(runner.evaluate(make_dataset(engine, repeat=False)))
    assert runner.systems[0].program.mode == "eval"


@pytest.mark.spec("GRAPH-007")
def test_train_run_cannot_evaluate_on_cs(engine):
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine), 2)
    with pytest.raises(ExecutionModeError, match="reprogrammed"):
        runner.evaluate(make_dataset(engine, repeat=False))


@pytest.mark.spec("GRAPH-007")
def test_train_run_can_evaluate_on_cpu(engine):
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine), 2)
    assert np.isfinite(runner.evaluate(make_dataset(engine, repeat=False)))


@pytest.mark.spec("GRAPH-008")
def test_recompile_only_on_change_on_cpu(engine):
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine, batch=4), 5)
    assert runner.compiles == 1
    train(runner, make_dataset(engine, batch=2), 7)
    assert runner.compiles == 2
    train(runner, make_dataset(engine, batch=4), 9)
    assert runner.compiles == 3
    assert runner.systems[0].programs_loaded == 3


@pytest.mark.spec("GRAPH-009")
def test_trace_records_layers_loss_shapes_and_dtypes(engine):
    _model, runner = make_runner(engine)
    train(runner, make_dataset(engine, batch=4), 1)
    graph = runner.artifact.graph
    assert graph.op_names() == ("linear", "relu", "linear", "cross_entropy")
    assert graph.ops[0].input_shapes == ((4, FEATURES), (5, FEATURES), (5,))  # input, weight, bias
    assert graph.ops[0].input_dtypes == ("float32", "float32", "float32")
    assert graph.ops[1].input_shapes == ((4, 5),)
    assert graph.ops[2].input_shapes == ((4, 5), (CLASSES, 5), (CLASSES,))
    assert graph.ops[3].input_shapes == ((4, CLASSES), (4,))
    x = np.ones((2, 3), dtype=np.float32)
    first, _ = engine.graph.trace(lambda: engine.graph.record("linear", x))
    second, _ = engine.graph.trace(lambda: engine.graph.record("linear", x))
    other, _ = engine.graph.trace(lambda: engine.graph.record("linear", x.astype(np.float16)))
    assert first == second and first.fingerprint() == second.fingerprint()
    assert first != other and first.fingerprint() != other.fingerprint()


@pytest.mark.spec("GRAPH-009")
def test_a_loss_of_the_prediction_alone_is_traced_with_that_one_input(engine):
    def mse_loss(prediction, labels):  # unlabelled data: the loss pulls the outputs towards 0
        assert labels is None
        return engine.nn.mse_loss(prediction, np.zeros((4, CLASSES), dtype=np.float32))

    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, 5), engine.nn.ReLU(), engine.nn.Linear(5, CLASSES))
    runner = engine.runner.Runner(model, mse_loss, engine.optim.SGD(model.parameters(), lr=0.05))
    x = np.random.default_rng(0).standard_normal((8, FEATURES)).astype(np.float32)
    unlabelled = engine.data.Dataset.from_tensor_slices((x, None)).repeat().batch(4, drop_remainder=True)
    train(runner, unlabelled, 1)
    graph = runner.artifact.graph
    assert graph.op_names() == ("linear", "relu", "linear", "mse_loss")
    assert graph.ops[3].input_shapes == ((4, CLASSES),) and graph.ops[3].input_dtypes == ("float32",)


@pytest.mark.spec("GRAPH-010")
def test_runner_loop_keeps_graph_static_on_cs(engine):
    _model, runner = make_runner(engine)
    losses = train(runner, make_dataset(engine, batch=4, samples=10), 20)
    assert len(losses) == 20
    assert runner.compiles == 1
    assert runner.systems[0].programs_loaded == 1


@pytest.mark.spec("GRAPH-008")
@given(batches=st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=5))
@settings(max_examples=15)
def test_cpu_compiles_once_per_distinct_consecutive_graph(engine, batches):
    engine.reset()
    engine.set_target("cpu")
    _model, runner = make_runner(engine)
    for segment, batch in enumerate(batches, start=1):
        train(runner, make_dataset(engine, batch=batch), 2 * segment)
    changes = sum(1 for before, after in zip(batches, batches[1:], strict=False) if before != after)
    assert runner.compiles == 1 + changes
