"""The reference NumPy wafer engine: the default implementation under test.

It implements every capability of the implementation interface (:mod:`csconform.interface`) on
both targets, natively (no emulations). Any other implementation plugs in the same way: a module
with the same declaration and the submodules its capabilities list. Submodules are imported on
first use, so ``import csconform.engine`` stays cheap.
"""

from __future__ import annotations

from csconform import __version__
from csconform.engine import context
from csconform.engine.context import current_target, reset, set_target, use_target
from csconform.interface.kit.package import submodules_on_first_use

CAPABILITIES = frozenset(
    {
        "precision",
        "amp",
        "nn",
        "optim",
        "lr_schedule",
        "data",
        "graph",
        "runner",
        "metrics",
        "executor",
        "estimator",
        "execution",
        "appliance",
        "performance",
    }
)
TARGETS = ("cs", "cpu")
EMULATIONS: dict[str, str] = {}
IMPLEMENTATION = f"csconform reference engine {__version__}"

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
    "executor",
)

__all__ = [
    "CAPABILITIES",
    "EMULATIONS",
    "SUBMODULES",
    "TARGETS",
    "context",
    "current_target",
    "reset",
    "set_target",
    "use_target",
]

__getattr__ = submodules_on_first_use(__name__, SUBMODULES)
