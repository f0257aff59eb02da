"""Implementations that differ from the reference engine in one observable, for the differential fuzzer's meta-tests.

Unlike the broken engines next door, these patch nothing: ``csconform diff`` runs A and B in one
process, so a wrapper must leave ``csconform.engine`` itself alone. Each module here is the engine
with one submodule replaced by a copy (:func:`engine_with`) in which one name differs.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import csconform.engine as _engine


def submodule_with(name: str, **replacements: Any) -> ModuleType:
    """A copy of ``csconform.engine.<name>`` with some names replaced."""
    original = getattr(_engine, name)
    copy = ModuleType(f"{original.__name__}_wrapped")
    copy.__dict__.update({key: value for key, value in vars(original).items() if not key.startswith("__")})
    copy.__dict__.update(replacements)
    return copy


def delegate(name: str) -> Any:
    """What a wrapper module's ``__getattr__`` gives for every name it does not replace."""
    return getattr(_engine, name)
