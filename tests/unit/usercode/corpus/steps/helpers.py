"""Helpers the traced step of graph_step.py calls: they run inside the step too."""

import cerebras.pytorch as cstorch


def scale_check(loss):
    if loss.isnan().any():  # expect: CODE-001
        raise ValueError("the loss is not a number")


@cstorch.step_closure
def log_loss(loss):
    # near miss: a closure called from the step reads the value after the step
    print(loss.item())


def not_in_the_step(loss):
    # near miss: nothing calls this from the step
    return loss.item() > 1.0
