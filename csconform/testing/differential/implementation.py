"""An implementation under comparison: its module, what it declares, its version, and how a statement runs on it.

Every statement runs in a namespace of its own per implementation (``impl``, ``np``, ``math``,
``workdir`` and the variables bound so far), and ends in an :class:`Outcome`: the value it gave, a
refusal (a :class:`~csconform.errors.CsConformError`, by type), a crash (any other exception, by
type), the end of an iteration, or ``unsupported`` (the implementation cannot show this call on its
backend: the call is not compared).
"""

from __future__ import annotations

import ast
import importlib
import math
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import numpy as np

from csconform.errors import CsConformError, InvalidInputError, Unsupported
from csconform.interface.capabilities import get_capability
from csconform.interface.validate import Declaration, declaration_of


@dataclass(frozen=True)
class Implementation:
    """A module that implements the interface (``--engine`` / ``--against``)."""

    name: str
    module: ModuleType
    declaration: Declaration
    version: str

    @property
    def short_name(self) -> str:
        """The last part of the module name: ``cstorch`` for ``csconform.adapters.cstorch``."""
        return self.name.rpartition(".")[2]

    def supports(self, capabilities: frozenset[str]) -> bool:
        return capabilities <= self.declaration.capabilities

    def import_submodules(self) -> None:
        """Import every submodule its declared capabilities list (an implementation may import them lazily)."""
        for capability in self.declaration.capabilities:
            for path in get_capability(capability).modules:
                value: Any = self.module
                for part in path.split("."):
                    value = getattr(value, part, None)

    def start(self, target: str, workdir: Path) -> dict[str, Any]:
        """Reset the implementation to its defaults on ``target``; the namespace a program runs in."""
        self.module.reset()
        self.module.set_target(target)
        return {"impl": self.module, "np": np, "math": math, "workdir": workdir}


def implementation_version(module: ModuleType) -> str:
    """The release the report names for an implementation: ``VERSION`` or an adapter's ``PACKAGE``,
    else the module's ``__version__``; csconform's own modules carry csconform's version. (Which triage
    applies is decided by the installed distribution the triage names: csconform/triage.py.)"""
    for attribute in ("VERSION", "PACKAGE"):
        value = getattr(module, attribute, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    if module.__name__.split(".")[0] == "csconform":
        from csconform import __version__

        return f"csconform {__version__}"
    version = getattr(module, "__version__", None)
    return f"{module.__name__} {version}" if isinstance(version, str) else f"{module.__name__} (unversioned)"


def load_implementation(name: str) -> Implementation:
    """Import and check an implementation module; a wrong one is a clear error."""
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise InvalidInputError(f"cannot import the implementation {name!r}: {error}") from error
    declaration, problems = declaration_of(module)
    if declaration is None:
        raise InvalidInputError(f"{name} does not declare what it implements: {'; '.join(problems)}")
    return Implementation(name, module, declaration, implementation_version(module))


# --- running one statement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a statement did on one implementation."""

    status: str
    """``returned``, ``refused``, ``crashed``, ``stopped`` (StopIteration) or ``unsupported``."""
    value: Any = None
    error: str = ""
    """The exception's type name, for ``refused`` and ``crashed``."""
    message: str = ""

    def describe(self) -> str:
        """For a signature: ``returns``, ``refuses (GradScalerUsageError)``, ``crashes (AttributeError)``."""
        if self.status == "returned":
            return "returns"
        if self.status == "stopped":
            return "stops iteration"
        verb = {"refused": "refuses", "crashed": "crashes"}.get(self.status, self.status)
        return f"{verb} ({self.error})" if self.error else verb

    def show(self, limit: int = 160) -> str:
        """For a person: the value, or the exception with its message."""
        if self.status == "returned":
            text = _short_repr(self.value)
        elif self.status == "stopped":
            text = "StopIteration"
        else:
            text = f"{self.error}: {self.message}" if self.message else self.error
        return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_repr(value: Any) -> str:
    if isinstance(value, np.ndarray):
        with np.printoptions(precision=9, threshold=12, edgeitems=3):
            return f"array({np.array2string(value, separator=', ')}, dtype={value.dtype})"
    return repr(value)


@cache
def _compiled(source: str) -> tuple[CodeType, str | None]:
    """The statement compiled once: an expression to evaluate (and the name it binds), or code to exec."""
    node = ast.parse(source).body[0]
    if isinstance(node, ast.Expr):
        return compile(ast.Expression(node.value), "<program>", "eval"), None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return compile(ast.Expression(node.value), "<program>", "eval"), node.targets[0].id
    return compile(ast.Module([node], []), "<program>", "exec"), ""


def execute(source: str, namespace: dict[str, Any]) -> Outcome:
    """Run one statement in ``namespace`` and say what happened."""
    code, binds = _compiled(source)
    try:
        if binds == "":
            exec(code, namespace)  # an attribute or item assignment: nothing to return
            value = None
        else:
            value = eval(code, namespace)
            if binds:
                namespace[binds] = value
    except Unsupported as exc:
        return Outcome("unsupported", error=type(exc).__name__, message=str(exc))
    except StopIteration:
        return Outcome("stopped")
    except CsConformError as exc:
        return Outcome("refused", error=type(exc).__name__, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - an implementation's untyped failure is an observation
        return Outcome("crashed", error=type(exc).__name__, message=str(exc))
    return Outcome("returned", value)


class Workdirs:
    """Fresh directories for programs (``workdir``), removed together at the end of a run."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="csconform-diff-"))
        self.count = 0

    def new(self) -> Path:
        self.count += 1
        path = self.root / str(self.count)
        path.mkdir()
        return path

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workdirs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
