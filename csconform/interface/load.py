"""Importing an implementation under test by its module name, whatever goes wrong while it imports.

An implementation is the user's code: importing it can fail in any way, not only with
``ImportError`` (a ``ValueError`` at module level, a ``SystemExit``, a syntax error). Every
command and the pytest plugin import it through :func:`import_implementation`, so each of those
failures is one typed, one-line refusal naming the module and where it failed, never a traceback
(nor a pytest ``INTERNALERROR``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from csconform.errors import InterfaceError, InvalidInputError


def check_module_name(name: object) -> str:
    """``name`` if it is a dotted module path (``my_runtime.adapter``), else InvalidInputError."""
    if not isinstance(name, str) or not name or not all(part.isidentifier() for part in name.split(".")):
        raise InvalidInputError(
            f"an implementation is named by its dotted module path (e.g. my_runtime.csconform_adapter), got {name!r}"
        )
    return name


def where_it_failed(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc``'s traceback (empty when there is none)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({exc.filename}:{exc.lineno})"
    return f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def module_attribute(module: object, name: str, default: Any = None) -> Any:
    """``module.name``, or ``default`` when it has none. A package that imports its submodules on first use
    (a module ``__getattr__``) may raise ImportError, not AttributeError, for a name it lacks."""
    try:
        return getattr(module, name)
    except KeyboardInterrupt:
        raise
    except (AttributeError, ImportError):
        return default


def import_implementation(name: object) -> ModuleType:
    """The module ``name``, imported the way ``python -m`` and pytest would find it (the current folder
    first: implementation_sources looks there too); an InvalidInputError when it cannot be found, an
    InterfaceError when its own code fails while importing."""
    module_name = check_module_name(name)
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise InvalidInputError(
                f"cannot import the implementation {module_name!r}: no module named {exc.name!r}"
            ) from None
        raise InterfaceError(
            f"the implementation {module_name!r} failed to import: {exc}{where_it_failed(exc)}"
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's module may raise anything, SystemExit included
        raise InterfaceError(
            f"the implementation {module_name!r} failed to import: {type(exc).__name__}: {exc}{where_it_failed(exc)}"
        ) from None


def implementation_sources(name: str) -> list[Path]:
    """The source files of the implementation module ``name`` (every ``.py`` file of a package), found
    the way an import would find them (the current folder first) but without importing anything: a
    command protects them from its outputs before the implementation runs. Empty when not found (the
    import then says why)."""
    locations: list[str] = [os.getcwd(), *sys.path]
    spec = None
    for part in name.split("."):
        spec = importlib.machinery.PathFinder.find_spec(part, locations)
        if spec is None:
            return []
        locations = list(spec.submodule_search_locations or [])
    assert spec is not None
    if spec.submodule_search_locations:
        return sorted(file for folder in spec.submodule_search_locations for file in Path(folder).rglob("*.py"))
    return [Path(spec.origin)] if spec.has_location and spec.origin else []
