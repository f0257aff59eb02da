"""Conformance checks of the CerebrasEstimator (specs/estimator.yaml).

Each limitation is checked both ways: refused on target cs, accepted on target cpu.
"""

from __future__ import annotations

import numpy as np
import pytest

from csconform.errors import InvalidInputError, RunConfigError, UnsupportedOnSystemError, UnsupportedTensorFlowError

FEATURES = 3
TF_CONFIG = {"TF_CONFIG": '{"cluster": {"chief": ["localhost:2222"]}, "task": {"type": "chief", "index": 0}}'}
EVAL_METRIC_OPS_MESSAGE = "[Unsupported TensorFlow] Detected unsupported eval_metric_ops in CS system training run."


class Recorder:
    """A user hook that remembers what it saw."""

    def __init__(self, engine):
        self.calls = []
        base = engine.estimator.SessionRunHook
        recorder = self

        class Hook(base):
            def begin(self):
                recorder.calls.append("begin")

            def before_run(self, step):
                recorder.calls.append(("before", step))

            def after_run(self, step, loss):
                recorder.calls.append(("after", step))

            def end(self):
                recorder.calls.append("end")

        self.hook = Hook()


def linear_problem(samples=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((samples, FEATURES)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32)).astype(np.float32)
    return x, y


def make_estimator(engine, *, eval_metric_ops=False, spec_hooks=(), config=None, env=TF_CONFIG, seen=None):
    w = np.zeros(FEATURES, dtype=np.float32)

    def model_fn(features, labels, mode, params):
        if seen is not None:
            seen.append((features.shape, None if labels is None else labels.shape, mode, params))
        error = features @ w - labels
        gradient = 2 * features.T @ error / len(labels)

        def train_op():
            w[:] -= params["lr"] * gradient

        metrics = None
        if eval_metric_ops:
            metric = engine.metrics.Mean()
            metric.update(np.abs(error))
            metrics = {"mean_absolute_error": metric}
        return engine.estimator.EstimatorSpec(
            mode,
            loss=float(np.mean(error**2)),
            train_op=train_op,
            eval_metric_ops=metrics,
            training_hooks=tuple(spec_hooks),
        )

    config = config if config is not None else engine.estimator.CSRunConfig()
    estimator = engine.estimator.CerebrasEstimator(
        model_fn, config=config, params={"lr": 0.05, "batch_size": 8}, env=env
    )
    return estimator, w


def input_fn_for(engine):
    x, y = linear_problem()

    def input_fn(params):
        dataset = engine.data.Dataset.from_tensor_slices((x, y)).shuffle(64).repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    return input_fn


@pytest.mark.spec("ESTIMATOR-001")
def test_everything_accepted_on_cpu_and_refused_on_cs(engine):
    x, y = linear_problem()

    def input_fn(params, mode):
        return engine.data.Dataset.from_tensor_slices((x, y)).shuffle(64).repeat().batch(params["batch_size"])

    def build():
        recorder = Recorder(engine)
        config = engine.estimator.CSRunConfig(save_checkpoint_steps=1, save_checkpoint_secs=60, protocol="grpc")
        estimator, w = make_estimator(engine, eval_metric_ops=True, config=config, env={})
        return estimator, w, recorder

    estimator, _w, recorder = build()
    with pytest.raises(UnsupportedOnSystemError):
        estimator.train(input_fn, steps=5, hooks=[recorder.hook])
    assert recorder.calls == []

    engine.set_target("cpu")
    estimator, w, recorder = build()
    result = estimator.train(input_fn, steps=5, hooks=[recorder.hook])
    assert result.steps_run == 5 and recorder.calls[0] == "begin" and recorder.calls[-1] == "end"
    assert "mean_absolute_error" in estimator.evaluate(lambda params: (x[:8], y[:8]), steps=1)
    assert np.any(w != 0)


@pytest.mark.spec("ESTIMATOR-002")
def test_user_hooks_refused_on_cs(engine):
    recorder = Recorder(engine)
    estimator, w = make_estimator(engine)
    with pytest.raises(UnsupportedTensorFlowError, match="tensor that is not initialized"):
        estimator.train(input_fn_for(engine), steps=3, hooks=[recorder.hook])
    estimator, w = make_estimator(engine, spec_hooks=[recorder.hook])
    with pytest.raises(UnsupportedTensorFlowError, match="not initialized"):
        estimator.train(input_fn_for(engine), steps=3)
    assert recorder.calls == [] and not np.any(w)


@pytest.mark.spec("ESTIMATOR-002")
def test_user_hooks_run_on_cpu(engine):
    engine.set_target("cpu")
    recorder = Recorder(engine)
    estimator, _w = make_estimator(engine)
    estimator.train(input_fn_for(engine), steps=2, hooks=[recorder.hook])
    assert recorder.calls == ["begin", ("before", 0), ("after", 0), ("before", 1), ("after", 1), "end"]


@pytest.mark.spec("ESTIMATOR-003")
def test_eval_metric_ops_refused_on_cs_with_documented_message(engine):
    estimator, w = make_estimator(engine, eval_metric_ops=True)
    with pytest.raises(UnsupportedTensorFlowError) as refused:
        estimator.train(input_fn_for(engine), steps=3)
    assert str(refused.value) == EVAL_METRIC_OPS_MESSAGE
    assert not np.any(w)
    with pytest.raises(UnsupportedTensorFlowError) as refused:
        estimator.evaluate(input_fn_for(engine), steps=1)
    assert str(refused.value) == EVAL_METRIC_OPS_MESSAGE


@pytest.mark.spec("ESTIMATOR-003")
def test_eval_metric_ops_accepted_on_cpu(engine):
    engine.set_target("cpu")
    estimator, w = make_estimator(engine, eval_metric_ops=True)
    assert estimator.train(input_fn_for(engine), steps=3).steps_run == 3
    assert np.any(w)


@pytest.mark.spec("ESTIMATOR-004")
def test_eval_metrics_for_debugging_on_cpu(engine):
    engine.set_target("cpu")
    x, y = linear_problem()
    estimator, w = make_estimator(engine, eval_metric_ops=True)
    w[:] = [1.0, -2.0, 0.0]

    def eval_input(params):
        return engine.data.Dataset.from_tensor_slices((x[:8], y[:8])).batch(8, drop_remainder=True)

    results = estimator.evaluate(eval_input)
    error = x[:8] @ w - y[:8]
    assert results["mean_absolute_error"] == pytest.approx(np.mean(np.abs(error)), rel=1e-6)
    assert results["loss"] == pytest.approx(np.mean(error**2), rel=1e-6)


@pytest.mark.spec("ESTIMATOR-005")
def test_model_fn_receives_features_labels_mode_params(engine):
    seen = []
    estimator, _w = make_estimator(engine, seen=seen)
    estimator.train(input_fn_for(engine), steps=2)
    assert len(seen) >= 2
    assert all(s == ((8, FEATURES), (8,), "train", {"lr": 0.05, "batch_size": 8}) for s in seen)

    def bad_model_fn(features, labels, mode, params):
        return {"loss": 0.0}

    bad = engine.estimator.CerebrasEstimator(bad_model_fn, params={"batch_size": 8}, env=TF_CONFIG)
    with pytest.raises(InvalidInputError, match="EstimatorSpec"):
        bad.train(input_fn_for(engine), steps=1)


@pytest.mark.spec("ESTIMATOR-006")
def test_train_runs_exactly_the_given_steps(engine):
    estimator, _w = make_estimator(engine)
    result = estimator.train(input_fn_for(engine), steps=7)
    assert result.steps_run == 7 and len(result.losses) == 7 and estimator.global_step == 7
    assert estimator.train(input_fn_for(engine), steps=3).steps_run == 3
    for steps in (None, 0, -1, 2.5):
        with pytest.raises(InvalidInputError, match="steps"):
            estimator.train(input_fn_for(engine), steps=steps)


def check_unsupported_parameter(engine, parameter, value):
    """Refused on cs (RunConfigError naming the parameter, nothing trained), accepted on cpu."""
    config = engine.estimator.CSRunConfig(**{parameter: value})
    estimator, w = make_estimator(engine, config=config)
    with pytest.raises(RunConfigError, match=parameter):
        estimator.train(input_fn_for(engine), steps=2)
    assert not np.any(w)
    engine.set_target("cpu")
    estimator, w = make_estimator(engine, config=engine.estimator.CSRunConfig(**{parameter: value}))
    assert estimator.train(input_fn_for(engine), steps=2).steps_run == 2


@pytest.mark.spec("ESTIMATOR-007")
def test_save_checkpoint_secs_refused_on_cs(engine):
    check_unsupported_parameter(engine, "save_checkpoint_secs", 600)


@pytest.mark.spec("ESTIMATOR-008")
def test_train_distribute_refused_on_cs(engine):
    check_unsupported_parameter(engine, "train_distribute", "MirroredStrategy")


@pytest.mark.spec("ESTIMATOR-009")
def test_device_fn_refused_on_cs(engine):
    check_unsupported_parameter(engine, "device_fn", lambda op: "/cpu:0")


@pytest.mark.spec("ESTIMATOR-010")
def test_protocol_refused_on_cs(engine):
    check_unsupported_parameter(engine, "protocol", "grpc+verbs")


@pytest.mark.spec("ESTIMATOR-011")
def test_eval_distribute_refused_on_cs(engine):
    check_unsupported_parameter(engine, "eval_distribute", "MirroredStrategy")


@pytest.mark.spec("ESTIMATOR-012")
def test_experimental_distribute_refused_on_cs(engine):
    check_unsupported_parameter(engine, "experimental_distribute", "DistributeConfig")


@pytest.mark.spec("ESTIMATOR-013")
def test_experimental_max_worker_delay_secs_refused_on_cs(engine):
    check_unsupported_parameter(engine, "experimental_max_worker_delay_secs", 30)


@pytest.mark.spec("ESTIMATOR-014")
@pytest.mark.parametrize(
    "env", [{}, {"TF_CONFIG": "not json"}, {"TF_CONFIG": "[1, 2]"}], ids=["missing", "bad-json", "not-object"]
)
def test_tf_config_required_on_cs(engine, env):
    estimator, w = make_estimator(engine, env=env)
    with pytest.raises(RunConfigError, match="TF_CONFIG"):
        estimator.train(input_fn_for(engine), steps=2)
    assert not np.any(w)
    engine.set_target("cpu")
    estimator, _w = make_estimator(engine, env=env)
    assert estimator.train(input_fn_for(engine), steps=2).steps_run == 2


@pytest.mark.spec("ESTIMATOR-015")
def test_tf_config_read_from_process_environment(engine, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    estimator, _w = make_estimator(engine, env=None)
    with pytest.raises(RunConfigError, match="TF_CONFIG"):
        estimator.train(input_fn_for(engine), steps=1)
    monkeypatch.setenv("TF_CONFIG", TF_CONFIG["TF_CONFIG"])
    assert estimator.train(input_fn_for(engine), steps=1).steps_run == 1


@pytest.mark.spec("ESTIMATOR-016")
def test_save_checkpoint_steps_lower_bound_on_cs(engine):
    assert engine.estimator.CSRunConfig().min_save_checkpoint_steps == 100  # our documented default
    for steps, accepted in [(1, False), (99, False), (100, True), (500, True)]:
        estimator, _w = make_estimator(engine, config=engine.estimator.CSRunConfig(save_checkpoint_steps=steps))
        if accepted:
            assert estimator.train(input_fn_for(engine), steps=2).steps_run == 2
        else:
            with pytest.raises(RunConfigError, match="save_checkpoint_steps"):
                estimator.train(input_fn_for(engine), steps=2)
    configured = engine.estimator.CSRunConfig(save_checkpoint_steps=10, min_save_checkpoint_steps=10)
    estimator, _w = make_estimator(engine, config=configured)
    assert estimator.train(input_fn_for(engine), steps=2).steps_run == 2
    configured = engine.estimator.CSRunConfig(save_checkpoint_steps=9, min_save_checkpoint_steps=10)
    estimator, _w = make_estimator(engine, config=configured)
    with pytest.raises(RunConfigError, match="lower bound 10"):
        estimator.train(input_fn_for(engine), steps=2)
    engine.set_target("cpu")
    estimator, _w = make_estimator(engine, config=engine.estimator.CSRunConfig(save_checkpoint_steps=1))
    assert estimator.train(input_fn_for(engine), steps=2).steps_run == 2


@pytest.mark.spec("ESTIMATOR-017")
@pytest.mark.parametrize("target", ["cs", "cpu"])
def test_losses_stream_to_the_host_step_by_step(engine, target):
    seen = []
    estimator, w = make_estimator(engine, seen=seen)
    streamed = []

    def on_loss(step, loss):
        # the callback sees step k before step k+1 has pulled its batch
        streamed.append((step, loss, len(seen)))

    with engine.use_target(target):
        result = estimator.train(input_fn_for(engine), steps=6, on_loss=on_loss)
    assert [step for step, _, _ in streamed] == list(range(6))
    assert [loss for _, loss, _ in streamed] == result.losses
    assert [batches for _, _, batches in streamed] == list(range(1, 7))
