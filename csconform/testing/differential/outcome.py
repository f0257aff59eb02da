"""What one statement did on one implementation, in the implementation's own process.

Every statement runs in a namespace of its own per implementation (``impl``, ``np``, ``math``,
``workdir`` and the variables bound so far), and ends in an :class:`Outcome`: the value it gave, a
refusal (a :class:`~csconform.errors.CsConformError`, by type), a crash (any other exception, by
type, ``SystemExit`` included), the end of an iteration, or ``unsupported`` (the implementation
cannot show this call on its backend: the call is not compared). Two more outcomes are seen only
from outside the process: it gave no answer in time (``hung``), or the process ended (``ended``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from types import CodeType
from typing import Any

import numpy as np

from csconform.errors import CsConformError, Unsupported

SHOWN_CHARACTERS = 160
"""How much of a value or an error message a person is shown."""


@dataclass(frozen=True)
class Outcome:
    """What a statement did on one implementation."""

    status: str
    """``returned``, ``refused``, ``crashed``, ``stopped`` (StopIteration), ``unsupported``, ``hung`` or ``ended``."""
    value: Any = None
    """The value returned, as plain data (compare.comparable)."""
    error: str = ""
    """The exception's type name, for ``refused`` and ``crashed``."""
    message: str = ""
    shown: str = ""
    """The value or the exception as a person reads it (made where the value lives)."""

    def describe(self) -> str:
        """For a signature: ``returns``, ``refuses (GradScalerUsageError)``, ``hangs``, ``ends its process``."""
        if self.status == "returned":
            return "returns"
        if self.status == "stopped":
            return "stops iteration"
        verb = {"refused": "refuses", "crashed": "crashes", "hung": "hangs", "ended": "ends its process"}.get(
            self.status, self.status
        )
        return f"{verb} ({self.error})" if self.error else verb

    def show(self) -> str:
        """For a person: the value, or what went wrong with its message."""
        if self.shown:
            return self.shown
        if self.status == "stopped":
            return "StopIteration"
        if self.error and self.message:
            return shorten(f"{self.error}: {self.message}")
        return shorten(self.message or self.error or self.describe())


def shorten(text: str) -> str:
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 3] + "..."


def show_value(value: Any) -> str:
    """``repr`` of a value an implementation returned, whatever its ``repr`` does."""
    try:
        if isinstance(value, np.ndarray):
            with np.printoptions(precision=9, threshold=12, edgeitems=3):
                return shorten(f"array({np.array2string(value, separator=', ')}, dtype={value.dtype})")
        return shorten(repr(value))
    except Exception as error:  # noqa: BLE001 - an implementation's repr may raise anything
        return f"<{type(value).__name__} whose repr raised {type(error).__name__}>"


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception as inner:  # noqa: BLE001 - an exception's str may raise too
        return f"<message unreadable: its str raised {type(inner).__name__}>"


@cache
def _compiled(source: str) -> tuple[CodeType, str | None]:
    """The statement compiled once: an expression to evaluate (and the name it binds), or code to exec."""
    node = ast.parse(source).body[0]
    if isinstance(node, ast.Expr):
        return compile(ast.Expression(node.value), "<program>", "eval"), None
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return compile(ast.Expression(node.value), "<program>", "eval"), node.targets[0].id
    return compile(ast.Module([node], []), "<program>", "exec"), ""


def execute(source: str, namespace: dict[str, Any]) -> tuple[Outcome, Any]:
    """Run one statement in ``namespace``: what happened, and the value it returned (None otherwise)."""
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
        return Outcome("unsupported", error=type(exc).__name__, message=_message(exc)), None
    except StopIteration:
        return Outcome("stopped"), None
    except CsConformError as exc:
        return Outcome("refused", error=type(exc).__name__, message=_message(exc)), None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - an implementation's untyped failure is an observation
        return Outcome("crashed", error=type(exc).__name__, message=_message(exc)), None
    return Outcome("returned", shown=show_value(value)), value
