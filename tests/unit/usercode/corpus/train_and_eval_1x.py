# csconform-corpus: release=1.7.1
"""Training and evaluation in one run, before 1.8.0 (pytorch-limitations, "Static Graphs": only mode "train"
and mode "eval"; the fabric cannot be reprogrammed for eval after train)."""

import tensorflow as tf

MODES = ["train", "eval", "train_and_eval"]  # near miss: the list of modes a command line offers
TRAIN_AND_EVAL = "train_and_eval"  # near miss: a name for the mode


def run(runner, params, estimator, train_spec, eval_spec, train_loader, eval_loader):
    params["runconfig"]["mode"] = "train_and_eval"  # expect: CODE-004
    runner.train_and_eval(train_loader, eval_loader)  # expect: CODE-004
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)  # expect: CODE-004
    if params["runconfig"]["mode"] == "train_and_eval":  # near miss: a comparison
        runner.train(train_loader)
    launch(mode="train_and_eval")  # expect: CODE-004


def launch(mode="train"):
    return mode
