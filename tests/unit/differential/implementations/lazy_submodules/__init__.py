"""A package that imports its submodules on first use the naive way: its module ``__getattr__``
raises ModuleNotFoundError (not AttributeError) for any name it lacks (``VERSION``, ``EMULATIONS``)."""

from __future__ import annotations

import importlib

from csconform.engine import CAPABILITIES, TARGETS, current_target, reset, set_target, use_target  # noqa: F401


def __getattr__(name: str) -> object:
    return importlib.import_module(f"csconform.engine.{name}")
