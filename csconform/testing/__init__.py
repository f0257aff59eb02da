"""Reusable test material shipped with csconform, so other implementations can run it too.

* :mod:`csconform.testing.strategies`: hypothesis strategies (global steps, loss scales, GradScaler
  configurations, gradients with injected inf/NaN).
* :mod:`csconform.testing.grad_scaler`: a reference model of dynamic loss scaling and
  ``GradScalerMachine``, a ``RuleBasedStateMachine`` that checks an engine's ``amp.GradScaler``
  against it (bind it to an engine, or subclass it to add rules).
* :mod:`csconform.testing.differential`: the lockstep differential fuzzer behind ``csconform diff``
  (two implementations, the same call sequences, every class of difference judged).
"""
