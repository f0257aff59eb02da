"""Optimizers (FP32 updates of FP32 master weights) and learning-rate schedules of the global step."""

from csconform.engine.optim import lr_scheduler
from csconform.engine.optim.optimizers import SGD, Adam, AdamW, Optimizer, ParamGroup

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "ParamGroup", "lr_scheduler"]
