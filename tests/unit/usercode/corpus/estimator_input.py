"""The CerebrasEstimator's input function (estimator-limitations, "Input function differences" and "Input function
limitations")."""

import numpy as np
import tensorflow as tf

tf.random.set_seed(0)  # expect: CODE-068


def input_fn(params):
    features = np.zeros((100, 4), np.float32)
    labels = np.zeros((100,), np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.shuffle(1000, seed=1).repeat(10)  # expect: CODE-068, CODE-065
    return dataset.batch(params["batch_size"])  # expect: CODE-067


def train_input_fn(params, mode):  # expect: CODE-062
    features = np.zeros((100, 4), np.float32)
    labels = np.zeros((100,), np.int32)
    return features, labels  # expect: CODE-063


def eval_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((np.zeros((10, 4)), np.zeros(10), np.zeros(10)))  # expect: CODE-064
    dataset = dataset.map(lambda x, y, z: ((x, z), y))  # expect: CODE-064
    dataset = dataset.padded_batch(8, padded_shapes=([4], []), drop_remainder=False)  # expect: CODE-067
    return dataset.make_one_shot_iterator().get_next()  # expect: CODE-063


def predict_input_fn(params, mode=tf.estimator.ModeKeys.PREDICT):
    """Near misses: the documented shape of an input function."""
    features = np.zeros((100, 4), np.float32)
    labels = np.zeros((100,), np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    dataset = dataset.shuffle(1000).repeat().batch(params["batch_size"], drop_remainder=True)
    return dataset.prefetch(2)


def generate_input_fn(shape, batch_size):
    """Near miss: a factory of input functions is not one."""
    return predict_input_fn, {"shape": shape, "batch_size": batch_size}


def transformed(dataset, drop):
    return dataset.batch(32, drop_remainder=drop)  # near miss: decided by the caller


def off_the_system(dataset, use_cs):
    if not use_cs():
        return dataset.batch(32)  # near miss: the CPU or GPU path
    return dataset.batch(32, drop_remainder=True)
