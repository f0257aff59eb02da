"""Implementations that differ from the reference engine in one place, for the differential fuzzer's meta-tests.

Unlike the broken engines next door, these patch nothing: each module here is the engine with one
submodule replaced by a copy in which one name differs, so the engine itself is left alone whether
``csconform diff`` runs the two implementations in one process or in two. Most are planted bugs, each
one a runtime author could write (the line that differs says ``planted``); tests/meta/test_differential.py
shows that the ci profile finds every one.

Two kinds of copy: :func:`submodule_with` copies a submodule's names (a replaced class is what the
programs build, while the submodule's own functions keep calling the engine's names), and
:func:`fresh_submodule` runs the submodule's source again, so that a name replaced in it changes what
its own functions call too (``DatasetIterator`` building the replaced ``_StageRngs``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

import csconform.engine as _engine


def _engine_submodule(name: str) -> ModuleType:
    return importlib.import_module(f"{_engine.__name__}.{name}")


def submodule_with(name: str, **replacements: Any) -> ModuleType:
    """A copy of ``csconform.engine.<name>`` (``optim.lr_scheduler`` for a nested one) with some names replaced."""
    original = _engine_submodule(name)
    copy = ModuleType(f"{original.__name__}_wrapped")
    copy.__dict__.update({key: value for key, value in vars(original).items() if not key.startswith("__")})
    copy.__dict__.update(replacements)
    return copy


def fresh_submodule(name: str, wrapper: str) -> ModuleType:
    """``csconform.engine.<name>`` executed again from its source, as a module of the wrapper ``wrapper``:
    its classes and functions are its own, and look up the names of this copy."""
    original = _engine_submodule(name)
    spec = importlib.util.spec_from_file_location(f"{wrapper}.{name}_copy", original.__file__)
    assert spec is not None and spec.loader is not None, original.__file__
    copy = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = copy  # dataclasses look their module up while the source runs
    spec.loader.exec_module(copy)
    return copy


def delegate(name: str) -> Any:
    """What a wrapper module's ``__getattr__`` gives for every name it does not replace."""
    return getattr(_engine, name)
