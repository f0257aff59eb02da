"""Conformance checks of compilation (specs/compilation.yaml): kernels, validate_only,
compile_only, artifact binding and the estimator's standalone compile()."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.errors import ArtifactMismatchError, UnsupportedOperationError

FEATURES, CLASSES = 4, 3


def graph_of(engine, *ops, batch=4):
    x = np.zeros((batch, FEATURES), dtype=np.float32)

    def step():
        for name in ops:
            engine.graph.record(name, x)

    graph, _ = engine.graph.trace(step)
    return graph


def make_runner(engine, model=None, **options):
    engine.nn.manual_seed(0)
    if model is None:
        model = engine.nn.Sequential(engine.nn.Linear(FEATURES, 5), engine.nn.ReLU(), engine.nn.Linear(5, CLASSES))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05)
    return engine.runner.Runner(model, engine.nn.cross_entropy, optimizer, **options)


def make_dataset(engine, batch=4, samples=32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, samples)
    return engine.data.Dataset.from_tensor_slices((x, y)).repeat().batch(batch, drop_remainder=True)


def swish_model(engine):
    """A model with a user-written leaf module: an operation the compiler has no kernel for."""

    class Swish(engine.nn.Module):
        def forward(self, x):
            self._x = np.asarray(x, dtype=np.float32)
            return self._x / (1 + np.exp(-self._x))

        def backward(self, grad):
            s = 1 / (1 + np.exp(-self._x))
            return grad * (s + self._x * s * (1 - s))

    return engine.nn.Sequential(engine.nn.Linear(FEATURES, 5), Swish(), engine.nn.Linear(5, CLASSES))


@pytest.mark.spec("COMPILE-001")
def test_unsupported_operation_refused_on_cs_by_name(engine):
    with pytest.raises(UnsupportedOperationError, match="fancy_fft"):
        engine.compiler.compile_graph(graph_of(engine, "linear", "fancy_fft"), system_id="cs-0", compile_only=True)
    runner = make_runner(engine, model=swish_model(engine))
    with pytest.raises(UnsupportedOperationError, match="swish"):
        next(runner.train(make_dataset(engine), 2))
    assert runner.systems[0].program is None


@pytest.mark.spec("COMPILE-001")
def test_unsupported_operation_accepted_on_cpu(engine):
    engine.set_target("cpu")
    artifact = engine.compiler.compile_graph(
        graph_of(engine, "linear", "fancy_fft"), system_id="cs-0", compile_only=True
    )
    assert "fancy_fft" in artifact.kernels
    runner = make_runner(engine, model=swish_model(engine))
    assert len(list(runner.train(make_dataset(engine), 2))) == 2


@pytest.mark.spec("COMPILE-002")
def test_validate_only_checks_without_artifact_or_system(engine):
    graph = graph_of(engine, "linear", "relu", "linear")
    system = engine.compiler.System("cs-0")
    report = engine.compiler.compile_graph(graph, system=system, validate_only=True)
    assert tuple(report.kernels) == ("linear", "relu", "linear")
    assert not hasattr(report, "system_id") and not hasattr(report, "placement")
    assert system.program is None and system.programs_loaded == 0
    with pytest.raises(UnsupportedOperationError, match="fancy_fft"):
        engine.compiler.compile_graph(graph_of(engine, "fancy_fft"), validate_only=True)


@pytest.mark.spec("COMPILE-003")
def test_compile_only_builds_full_artifact_without_a_system(engine):
    graph = graph_of(engine, "linear", "relu")
    artifact = engine.compiler.compile_graph(graph, mode="train", system_id="cs-7", compile_only=True)
    assert artifact.system_id == "cs-7"
    assert artifact.graph == graph and artifact.mode == "train"
    assert tuple(artifact.kernels) == ("linear", "relu")
    system = engine.compiler.System("cs-7")
    assert system.program is None
    system.load(artifact)
    assert system.program is artifact


@pytest.mark.spec("COMPILE-004")
def test_artifact_refused_on_another_system_on_cs(engine):
    artifact = engine.compiler.compile_graph(graph_of(engine, "linear"), system_id="cs-1", compile_only=True)
    other = engine.compiler.System("cs-2")
    with pytest.raises(ArtifactMismatchError, match="cs-1"):
        other.load(artifact)
    assert other.program is None


@pytest.mark.spec("COMPILE-004")
def test_artifact_accepted_on_another_system_on_cpu(engine):
    engine.set_target("cpu")
    artifact = engine.compiler.compile_graph(graph_of(engine, "linear"), system_id="cs-1", compile_only=True)
    other = engine.compiler.System("cs-2")
    other.load(artifact)
    assert other.program is artifact


def linear_estimator(engine, cs_ip="cs-0"):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, FEATURES)).astype(np.float32)
    y = (x @ np.arange(1, FEATURES + 1, dtype=np.float32)).astype(np.float32)
    w = np.zeros(FEATURES, dtype=np.float32)

    def model_fn(features, labels, mode, params):
        error = features @ w - labels
        gradient = 2 * features.T @ error / len(labels)

        def train_op():
            w[:] -= params["lr"] * gradient

        return engine.estimator.EstimatorSpec(mode, loss=float(np.mean(error**2)), train_op=train_op)

    def input_fn(params):
        dataset = engine.data.Dataset.from_tensor_slices((x, y)).shuffle(32).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    config = engine.estimator.CSRunConfig(cs_ip=cs_ip)
    estimator = engine.estimator.CerebrasEstimator(
        model_fn, config=config, params={"lr": 0.05, "batch_size": 8}, env={"TF_CONFIG": "{}"}
    )
    return estimator, input_fn


@pytest.mark.spec("COMPILE-004")
def test_estimator_refuses_artifact_of_another_system(engine):
    compiling, input_fn = linear_estimator(engine, cs_ip="cs-1")
    artifact = compiling.compile(input_fn)
    running, input_fn = linear_estimator(engine, cs_ip="cs-2")
    with pytest.raises(ArtifactMismatchError):
        running.train(input_fn, steps=2, artifact=artifact)
    engine.set_target("cpu")
    running, input_fn = linear_estimator(engine, cs_ip="cs-2")
    assert running.train(input_fn, steps=2, artifact=artifact).steps_run == 2


@pytest.mark.spec("COMPILE-005")
def test_estimator_compile_without_a_system(engine):
    estimator, input_fn = linear_estimator(engine, cs_ip="cs-3")
    report = estimator.compile(input_fn, validate_only=True)
    assert "input" in report.kernels and not hasattr(report, "system_id")
    artifact = estimator.compile(input_fn)
    assert artifact.system_id == "cs-3"
    assert estimator.system.program is None
    result = estimator.train(input_fn, steps=3, artifact=artifact)
    assert result.steps_run == 3
    assert estimator.system.program is artifact and estimator.system.programs_loaded == 1


@pytest.mark.spec("COMPILE-006")
def test_runner_compiles_once_before_the_first_step(engine):
    runner = make_runner(engine)
    outputs = runner.train(make_dataset(engine), 3)
    assert runner.systems[0].program is None  # nothing runs until the user asks for the first step
    first = next(outputs)
    program = runner.systems[0].program
    assert program is not None and first.step == 0
    assert program.graph.op_names() == ("linear", "relu", "linear", "cross_entropy")
    list(outputs)
    assert runner.systems[0].program is program and runner.systems[0].programs_loaded == 1


@pytest.mark.spec("COMPILE-006", "COMPILE-004")
def test_every_system_of_a_cluster_is_programmed_before_the_first_step(engine):
    runner = make_runner(engine, execution="weight_streaming", num_systems=3, system_ids=["cs-a", "cs-b", "cs-c"])
    outputs = runner.train(make_dataset(engine, batch=6), 3)
    assert all(system.program is None for system in runner.systems)
    next(outputs)
    programs = [system.program for system in runner.systems]
    for system, program in zip(runner.systems, programs, strict=True):
        assert program is not None, f"system {system.system_id} was not programmed before the first step"
        assert program.system_id == system.system_id  # an artifact runs only on the system it was compiled for
        assert program.graph.fingerprint() == programs[0].graph.fingerprint()  # the same program everywhere
    assert "cross_entropy" in programs[0].graph.op_names()
    list(outputs)
    assert [system.program for system in runner.systems] == programs
    assert [system.programs_loaded for system in runner.systems] == [1, 1, 1]


@pytest.mark.spec("COMPILE-006")
def test_estimator_train_compiles_automatically(engine):
    estimator, input_fn = linear_estimator(engine)
    assert estimator.system.program is None
    estimator.train(input_fn, steps=4)
    assert estimator.system.programs_loaded == 1
    assert estimator.system.program.graph.ops[0].input_shapes == ((8, FEATURES), (8,))


@pytest.mark.spec("COMPILE-007")
@pytest.mark.parametrize("wafer_name", ["WSE-2", "WSE-1", "WSE-3"])
def test_full_compile_carries_placement_and_modeled_throughput(engine, wafer_name):
    from csconform.perf.hardware import get_wafer
    from csconform.perf.models.layer import Layer
    from csconform.perf.plan import plan

    runner = make_runner(engine, model_performance=True, wafer=wafer_name)
    next(runner.train(make_dataset(engine, batch=8), 1))
    artifact = runner.artifact
    assert [region["name"] for region in artifact.placement] == ["0:linear", "2:linear"]
    wafer = get_wafer(wafer_name)
    regions = artifact.placement
    for region in regions:
        assert region["x"] >= 0 and region["y"] >= 0 and region["width"] >= 1 and region["height"] >= 1
        assert region["x"] + region["width"] <= wafer.fabric_width
        assert region["y"] + region["height"] <= wafer.fabric_height
    for i, a in enumerate(regions):
        for b in regions[i + 1 :]:
            assert (
                a["x"] + a["width"] <= b["x"]
                or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"]
                or b["y"] + b["height"] <= a["y"]
            ), (a, b)
    layers = [Layer("dense", FEATURES, 5), Layer("dense", 5, CLASSES)]
    expected = plan(layers, wafer=wafer_name, mode="pipelined", batch=8)
    assert artifact.modeled_samples_per_s == pytest.approx(expected.samples_per_s, rel=1e-6)
    assert artifact.modeled_samples_per_s > 0


@pytest.mark.spec("COMPILE-008")
def test_the_job_is_launched_and_compiled_on_the_chief_node(engine):
    runner = make_runner(engine, execution="pipelined")
    assert runner.job_log == []
    list(runner.train(make_dataset(engine), 3))
    log = [(event.node, event.action) for event in runner.job_log]
    assert all(isinstance(node, str) and node for node, _action in log), log  # every event names its machine
    chief = log[0][0]  # the node the job was launched from
    systems = {system.system_id for system in runner.systems}
    workers = {node for node, action in log if action == "batch"}
    assert log[0] == (chief, "launch")
    assert [node for node, action in log if action == "compile"] == [chief]
    first_step = next(index for index, (_node, action) in enumerate(log) if action == "step")
    assert log.index((chief, "compile")) < first_step
    # the compiled program is loaded onto each system after the compile and before the system runs a step
    loads = [index for index, (_node, action) in enumerate(log) if action == "program"]
    assert sorted(log[index][0] for index in loads) == sorted(systems)
    assert all(log.index((chief, "compile")) < index < first_step for index in loads)
    assert {node for node, action in log if action == "step"} == systems
    # the chief is a machine of its own: it neither prepares the batches nor runs the program
    assert workers and chief not in workers and chief not in systems and workers.isdisjoint(systems)


def _inside(point, region) -> bool:  # noqa: ANN001
    x, y = point
    return region["x"] <= x < region["x"] + region["width"] and region["y"] <= y < region["y"] + region["height"]


@pytest.mark.spec("COMPILE-009")
def test_adjacent_regions_are_joined_by_activation_and_gradient_paths(engine):
    from csconform.perf.hardware import get_wafer

    engine.nn.manual_seed(0)
    model = engine.nn.Sequential(
        engine.nn.Linear(FEATURES, 16),
        engine.nn.ReLU(),
        engine.nn.Linear(16, 8),
        engine.nn.ReLU(),
        engine.nn.Linear(8, CLASSES),
    )
    runner = make_runner(engine, model=model, model_performance=True)
    next(runner.train(make_dataset(engine, batch=8), 1))
    regions = runner.artifact.placement  # in pipeline order, input side first
    assert [region["name"] for region in regions] == ["0:linear", "2:linear", "4:linear"]
    expected = []
    for upstream, downstream in zip(regions, regions[1:], strict=False):
        expected += [
            (upstream["name"], downstream["name"], "activations"),
            (downstream["name"], upstream["name"], "gradients"),
        ]
    paths = runner.artifact.data_paths
    # one path each way between adjacent kernels, none between the first and the last
    assert sorted((p["source"], p["destination"], p["carries"]) for p in paths) == sorted(expected)
    by_name = {region["name"]: region for region in regions}
    wafer = get_wafer("WSE-2")
    for path in paths:
        route = [tuple(point) for point in path["route"]]
        assert _inside(route[0], by_name[path["source"]]) and _inside(route[-1], by_name[path["destination"]])
        for (x0, y0), (x1, y1) in zip(route, route[1:], strict=False):
            assert x0 == x1 or y0 == y1, path  # along a row or a column of the fabric
        assert all(0 <= x < wafer.fabric_width and 0 <= y < wafer.fabric_height for x, y in route)
