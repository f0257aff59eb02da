"""The CerebrasEstimator's model function and RunConfig (estimator-limitations, "Model function limitations",
"Parameters not supported", "Lower bound on save_checkpoint_steps")."""

import tensorflow as tf
from estimator_input import input_fn, train_input_fn
from modelzoo.common.tf.estimator.cs_estimator import CerebrasEstimator
from modelzoo.common.tf.estimator.cs_estimator_spec import CSEstimatorSpec
from modelzoo.common.tf.estimator.run_config import CSRunConfig


def model_fn(features, labels, mode, params):
    logits = tf.keras.layers.Dense(10)(features)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
    hook = tf.estimator.LoggingTensorHook({"loss": loss}, every_n_iter=10)
    return tf.estimator.EstimatorSpec(
        mode=mode,
        loss=loss,
        train_op=train_op,
        training_hooks=[hook],  # expect: CODE-060
        eval_metric_ops=metrics,  # expect: CODE-061
    )


def careful_model_fn(features, labels, mode, params):
    """Near misses: eval_metric_ops only when evaluating, hooks None on every path."""
    logits = tf.keras.layers.Dense(10)(features)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = None
    eval_metric_ops = None
    hooks = None
    if mode == tf.estimator.ModeKeys.TRAIN:
        train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss)
    elif mode == tf.estimator.ModeKeys.EVAL:
        eval_metric_ops = {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
    return CSEstimatorSpec(
        mode=mode, loss=loss, train_op=train_op, training_hooks=hooks, eval_metric_ops=eval_metric_ops
    )


config = CSRunConfig(
    model_dir="model_dir",
    save_checkpoint_steps=10,  # expect: CODE-070
    save_checkpoint_secs=600,  # expect: CODE-069
    tf_random_seed=1234,  # expect: CODE-068
)
good_config = tf.estimator.RunConfig(save_checkpoint_steps=1000, save_checkpoint_secs=None)  # near miss
estimator = CerebrasEstimator(model_fn=model_fn, config=config, params={})
estimator.train(input_fn=train_input_fn)  # expect: CODE-066
estimator.train(input_fn=input_fn, steps=1000, hooks=[tf.estimator.StopAtStepHook(10)])  # expect: CODE-060
estimator.train(input_fn=input_fn, max_steps=1000)  # near miss
estimator.evaluate(input_fn=lambda: input_fn({}), steps=10)  # expect: CODE-062
