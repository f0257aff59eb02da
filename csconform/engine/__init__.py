"""The reference NumPy wafer engine: the default implementation under test.

Any other implementation plugs in the same way: a module offering ``reset``, ``use_target``,
``set_target``, ``current_target`` and the submodules named in ``SUBMODULES``. Submodules are
imported on first use, so ``import csconform.engine`` stays cheap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from csconform.engine import context
from csconform.engine.context import current_target, reset, set_target, use_target

SUBMODULES = (
    "precision",
    "amp",
    "nn",
    "optim",
    "graph",
    "compiler",
    "runner",
    "estimator",
    "estimator_config",
    "system",
    "data",
    "metrics",
    "checkpoint",
    "execution",
    "appliance",
)

__all__ = ["SUBMODULES", "context", "current_target", "reset", "set_target", "use_target"]


def __getattr__(name: str) -> ModuleType:
    if name in SUBMODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
