"""Conformance checks of the PyTorch execution API (specs/executor.yaml): DataExecutor runs, the
checkpoint cadence, step and checkpoint closures, one compiled model per step, current_executor."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import ExecutionContextError, InvalidInputError

FEATURES, CLASSES = 3, 2


def batches(count, batch=4):
    """``count`` distinct (features, labels) batches: batch i's features are all i + 1."""
    labels = np.arange(batch) % CLASSES
    return [(np.full((batch, FEATURES), i + 1, dtype=np.float32), labels) for i in range(count)]


def loader(engine, count):
    return engine.executor.DataLoader(lambda: batches(count))


def training(engine, seed=0):
    """A compiled model, its optimizer and a traced training step."""
    engine.nn.manual_seed(seed)
    model = engine.nn.Sequential(engine.nn.Linear(FEATURES, CLASSES))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.5)
    compiled = engine.executor.compile(model)

    @engine.executor.trace
    def train_step(features, labels):
        optimizer.zero_grad()
        loss = engine.nn.cross_entropy(compiled(features), labels)
        loss.backward()
        optimizer.step()
        return loss

    return model, compiled, train_step


def run_ids(engine, count, **options):
    """The batch ids a run hands out, step by step."""
    executor = engine.executor.DataExecutor(loader(engine, count), **options)
    return [int(np.asarray(features)[0, 0]) - 1 for features, _labels in executor]


@pytest.mark.spec("EXECUTOR-001")
def test_the_loader_is_iterated_again_until_num_steps(engine):
    assert run_ids(engine, 3, num_steps=7) == [0, 1, 2, 0, 1, 2, 0]
    assert run_ids(engine, 3, num_steps=2) == [0, 1]
    assert run_ids(engine, 3) == [0, 1, 2]  # without num_steps: one pass


@pytest.mark.spec("EXECUTOR-001")
@given(count=st.integers(1, 5), num_steps=st.integers(1, 12))
@settings(max_examples=20)
def test_every_run_has_num_steps_steps(engine, count, num_steps):
    engine.reset()
    assert run_ids(engine, count, num_steps=num_steps) == [step % count for step in range(num_steps)]


@pytest.mark.spec("EXECUTOR-001")
def test_a_loader_without_batches_is_refused_before_the_first_step(engine):
    executor = engine.executor.DataExecutor(engine.executor.DataLoader(lambda: []), num_steps=2)
    bodies = []
    with pytest.raises(InvalidInputError):
        for batch in executor:
            bodies.append(batch)
    assert bodies == []


@pytest.mark.spec("EXECUTOR-001")
def test_a_run_trains_on_every_step(engine):
    model, _compiled, train_step = training(engine)
    before = model.state_dict()
    run = engine.executor.DataExecutor(loader(engine, 2), num_steps=5)
    losses = [float(train_step(*batch).item()) for batch in run]
    assert len(losses) == 5 and all(np.isfinite(losses))
    after = model.state_dict()
    assert any(not np.array_equal(before[name], after[name]) for name in before)


@pytest.mark.spec("EXECUTOR-002")
@pytest.mark.parametrize("num_steps", [0, -1])
def test_num_steps_below_one_is_refused(engine, num_steps):
    with pytest.raises(InvalidInputError):
        engine.executor.DataExecutor(loader(engine, 2), num_steps=num_steps)


@pytest.mark.spec("EXECUTOR-002")
@pytest.mark.parametrize("checkpoint_steps", [-1, 1.5, "2"])
def test_checkpoint_steps_must_be_a_count(engine, checkpoint_steps):
    with pytest.raises(InvalidInputError):
        engine.executor.DataExecutor(loader(engine, 2), num_steps=3, checkpoint_steps=checkpoint_steps)


@pytest.mark.spec("EXECUTOR-002")
def test_the_loader_must_be_a_dataloader(engine):
    with pytest.raises(InvalidInputError):
        engine.executor.DataExecutor(batches(2), num_steps=2)


@pytest.mark.spec("EXECUTOR-002")
@pytest.mark.parametrize("checkpoint_steps", [None, 0])
def test_no_checkpoint_steps(engine, checkpoint_steps):
    assert checkpoint_run(engine, num_steps=4, checkpoint_steps=checkpoint_steps) == []


def checkpoint_run(engine, **options):
    """The steps on which a checkpoint closure called in every step ran."""
    ran = []

    @engine.executor.checkpoint_closure
    def save(step):
        ran.append(step)

    for step, _batch in enumerate(engine.executor.DataExecutor(loader(engine, 3), **options)):
        save(step)
    return ran


@pytest.mark.spec("EXECUTOR-003")
@given(num_steps=st.integers(1, 12), every=st.integers(1, 6))
@settings(max_examples=20)
def test_checkpoint_cadence(engine, num_steps, every):
    engine.reset()
    expected = sorted(set(range(every - 1, num_steps, every)) | {num_steps - 1})
    assert checkpoint_run(engine, num_steps=num_steps, checkpoint_steps=every) == expected


@pytest.mark.spec("EXECUTOR-003")
@pytest.mark.parametrize(
    "num_steps, every, expected", [(5, 2, [1, 3, 4]), (3, 3, [2]), (4, 5, [3]), (6, 3, [2, 5]), (1, 1, [0])]
)
def test_checkpoint_cadence_fixed_cases(engine, num_steps, every, expected):
    assert checkpoint_run(engine, num_steps=num_steps, checkpoint_steps=every) == expected


def logging_closure(decorator, log: list, label: str):
    """A function made a step or checkpoint closure by ``decorator`` that appends ``(label, its
    argument)`` to ``log`` when it runs."""

    @decorator
    def record(value):
        log.append((label, value))

    return record


@pytest.mark.spec("EXECUTOR-004")
def test_a_checkpoint_closure_called_outside_a_run_waits_for_the_next_run(engine):
    log = []
    save = logging_closure(engine.executor.checkpoint_closure, log, "save")
    save("initial")
    assert log == []  # not outside a run
    for step, _batch in enumerate(engine.executor.DataExecutor(loader(engine, 2), num_steps=3, checkpoint_steps=5)):
        log.append(("step", step))
        save(step)
    assert log == [("save", "initial"), ("step", 0), ("step", 1), ("step", 2), ("save", 2)]
    save("after")
    assert log[-1] == ("save", 2)


@pytest.mark.spec("EXECUTOR-005")
def test_step_closures_run_at_the_end_of_their_step_in_order(engine):
    log = []
    first = logging_closure(engine.executor.step_closure, log, "first")
    second = logging_closure(engine.executor.step_closure, log, "second")
    for step, _batch in enumerate(engine.executor.DataExecutor(loader(engine, 2), num_steps=3)):
        log.append(("begin", step))
        first(step)
        second(step)
        log.append(("end", step))
    expected = []
    for step in range(3):
        expected += [("begin", step), ("end", step), ("first", step), ("second", step)]
    assert log == expected


@pytest.mark.spec("EXECUTOR-006")
def test_step_closures_see_the_values_at_the_call(engine):
    model, _compiled, train_step = training(engine)
    weight = model.parameters()[0]
    seen, before, losses = [], [], []

    @engine.executor.step_closure
    def look(weights, loss_value):
        seen.append((np.array(weights), loss_value))

    for features, labels in engine.executor.DataExecutor(loader(engine, 2), num_steps=3):
        before.append(weight.data.copy())
        look(weight.data, np.float32(len(losses)))  # the live weights, updated in place below
        losses.append(train_step(features, labels))
    for step in range(3):
        weights, marker = seen[step]
        assert np.array_equal(weights, before[step]), step
        assert float(marker) == step
    assert not np.array_equal(seen[-1][0], weight.data)  # the last update happened after the call


@pytest.mark.spec("EXECUTOR-006")
def test_a_loss_reaches_a_step_closure_as_its_value(engine):
    _model, _compiled, train_step = training(engine)
    received, returned = [], []

    @engine.executor.step_closure
    def receive(loss):
        received.append(float(loss))

    for features, labels in engine.executor.DataExecutor(loader(engine, 2), num_steps=2):
        loss = train_step(features, labels)
        returned.append(float(loss.item()))
        receive(loss)
    assert received == pytest.approx(returned, rel=1e-6)


@pytest.mark.spec("EXECUTOR-007")
def test_one_compiled_model_per_step(engine):
    _model, compiled, _step = training(engine, seed=0)
    other_model, other, _other_step = training(engine, seed=1)
    before = other_model.state_dict()
    for features, _labels in engine.executor.DataExecutor(loader(engine, 2), num_steps=1):
        compiled(features)
        compiled(features)  # the same model again: allowed
        with pytest.raises(ExecutionContextError, match="single compiled model"):
            other(features)
    assert all(np.array_equal(before[name], value) for name, value in other_model.state_dict().items())
    outputs = [other(features) for features, _labels in engine.executor.DataExecutor(loader(engine, 2), num_steps=2)]
    assert len(outputs) == 2 and np.asarray(outputs[0]).shape == (4, CLASSES)


@pytest.mark.spec("EXECUTOR-008")
def test_current_executor_inside_and_outside_a_run(engine):
    with pytest.raises(ExecutionContextError):
        engine.executor.current_executor()
    executor = engine.executor.DataExecutor(loader(engine, 2), num_steps=4)
    seen = []
    for step, _batch in enumerate(executor):
        current = engine.executor.current_executor()
        assert current is executor
        seen.append((current.iteration, current.on_final_iteration))
        assert step == current.iteration
    assert seen == [(0, False), (1, False), (2, False), (3, True)]
    with pytest.raises(ExecutionContextError):
        engine.executor.current_executor()
