"""A call sequence: Python statements over the interface, printable as a repro a person can paste.

A :class:`Program` is a list of statements such as ``scaler = impl.amp.GradScaler(loss_scale="dynamic")``
or ``scaler.update(0.0)``, in which ``impl`` is the implementation module, ``np`` and ``math`` the
usual modules and ``workdir`` a fresh directory. The same text runs on either implementation, is
what the report prints, and is what a triage entry stores, so a stored repro can be run again.

Each statement has a *call label* that names the interface call it makes (``GradScaler.update``,
``CosineDecayLR.__call__``, ``precision.quantize``). Labels come from the text alone (the class a
variable was built from), never from the objects an implementation returns, so a class signature
does not depend on which implementations ran.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from csconform.errors import InvalidInputError

NAMES = ("impl", "np", "math", "workdir")
"""The names every statement may use besides the variables earlier statements bind."""

RESULT_KINDS = {
    "Dataset.from_tensor_slices": "Dataset",
    "Dataset.shuffle": "Dataset",
    "Dataset.repeat": "Dataset",
    "Dataset.batch": "Dataset",
    "Dataset.map": "Dataset",
    "Dataset.iterator": "DatasetIterator",
    "DatasetIterator.restore": "DatasetIterator",
}
"""What a call returns, where that is an interface object later statements call."""


class Expr(str):
    """Python source to print as is (a variable, a lambda, a nested constructor call)."""


def literal(value: Any) -> str:
    """Python source that evaluates to ``value`` (floats and float32 arrays bit-exactly)."""
    if isinstance(value, Expr):
        return str(value)
    if value is None or isinstance(value, bool | str):
        return repr(value)
    if isinstance(value, np.ndarray):
        return _array_literal(value)
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({literal(value.item())})"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(literal(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"
    raise InvalidInputError(f"no literal for a {type(value).__name__}")


def _nested(values: np.ndarray) -> str:
    if values.ndim == 0:
        return literal(values.item())
    return "[" + ", ".join(_nested(row) for row in values) + "]"


def _array_literal(array: np.ndarray) -> str:
    if array.dtype == np.float32 and _needs_bits(array):
        bits = array.view(np.uint32)
        flat = ", ".join(f"0x{int(b):08x}" for b in bits.reshape(-1))
        shaped = "" if array.ndim == 1 else f".reshape({literal(tuple(array.shape))})"
        return f"np.array([{flat}], dtype=np.uint32){shaped}.view(np.float32)"
    return f"np.array({_nested(array)}, dtype=np.{array.dtype.name})"


def _needs_bits(array: np.ndarray) -> bool:
    """A float32 array whose NaNs are not the one ``math.nan`` gives prints as bit patterns."""
    nans = array[np.isnan(array)]
    return bool(nans.size) and bool(np.any(nans.view(np.uint32) != np.float32(math.nan).view(np.uint32)))


def call(function: str, *args: Any, **kwargs: Any) -> str:
    """``function(args..., key=value...)`` with every argument printed by :func:`literal`."""
    parts = [literal(arg) for arg in args] + [f"{key}={literal(value)}" for key, value in kwargs.items()]
    return f"{function}({', '.join(parts)})"


@dataclass(frozen=True)
class Statement:
    """One statement of a program and what the text says about it."""

    source: str
    label: str
    """The interface call it makes, e.g. ``GradScaler.update``."""
    binds: str | None
    """The variable it assigns, if any."""
    binds_kind: str | None
    """The interface class of that variable (``GradScaler``, ``Adam``, ``Dataset``), if known."""

    def kinds_after(self, kinds: Mapping[str, str], returned: bool) -> dict[str, str]:
        """The live objects (variable -> kind) once the statement ran: what it binds joins them when it
        returned an object of a known kind; a name it failed to (re)bind leaves them."""
        after = dict(kinds)
        if self.binds:
            if self.binds_kind and returned:
                after[self.binds] = self.binds_kind
            else:
                after.pop(self.binds, None)
        return after


@dataclass(frozen=True)
class Program:
    """A call sequence of one area, run on one target."""

    area: str
    target: str
    source: tuple[str, ...]

    @property
    def statements(self) -> tuple[Statement, ...]:
        return parse_statements(self.source)

    def kinds(self) -> dict[str, str]:
        """Variable -> its interface class, as the statements bind them."""
        return {s.binds: s.binds_kind for s in self.statements if s.binds and s.binds_kind}

    def repro(self, implementation: str = "csconform.engine", notes: Mapping[int, str] | None = None) -> str:
        """The program as a script for ``implementation``; ``notes`` are comments by statement index."""
        notes = notes or {}
        lines = [
            "import importlib, math, pathlib, tempfile",
            "import numpy as np",
            f'impl = importlib.import_module("{implementation}")',
            f'impl.reset(); impl.set_target("{self.target}")',
            "workdir = pathlib.Path(tempfile.mkdtemp())",
        ]
        for index, source in enumerate(self.source):
            note = notes.get(index)
            lines.append(f"{source}  # {note}" if note else source)
        return "\n".join(lines)


# --- reading statements back -----------------------------------------------------------------------


def _chain(node: ast.expr) -> list[str] | None:
    """``impl.amp.GradScaler`` as ``["impl", "amp", "GradScaler"]``; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _call_label(node: ast.expr, kinds: Mapping[str, str]) -> tuple[str, str | None]:
    """The call label of an expression and the interface class of its result (if known)."""
    if isinstance(node, ast.Call):
        chain = _chain(node.func)
        if chain and chain[0] == "impl" and len(chain) >= 2:
            name = chain[-1]
            if name[:1].isupper():
                return f"{name}.__init__", name
            label = f"{chain[-2]}.{name}"
            return label, RESULT_KINDS.get(label)
        if chain and len(chain) == 2 and chain[0] in kinds:
            label = f"{kinds[chain[0]]}.{chain[1]}"
            return label, RESULT_KINDS.get(label)
        if chain and len(chain) == 1 and chain[0] in kinds:
            return f"{kinds[chain[0]]}.__call__", None
        if chain == ["next"] and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in kinds:
            return f"{kinds[node.args[0].id]}.__next__", None
    if isinstance(node, ast.Name) and node.id in kinds:
        return f"{kinds[node.id]}", kinds[node.id]
    return "expression", None


def _target_label(node: ast.expr, kinds: Mapping[str, str]) -> str:
    """``p0.grad = ...`` is ``Parameter.grad=``; ``opt.param_groups[0]["lr"] = ...`` ``SGD.param_groups[]=``."""
    base = node
    subscripted = False
    while isinstance(base, ast.Subscript):
        base, subscripted = base.value, True
    chain = _chain(base)
    if chain and len(chain) == 2 and chain[0] in kinds:
        return f"{kinds[chain[0]]}.{chain[1]}{'[]' if subscripted else ''}="
    return "assignment"


@cache
def parse_statements(source: tuple[str, ...]) -> tuple[Statement, ...]:
    """Label every statement; refuse anything that is not one simple statement per line."""
    kinds: dict[str, str] = {}
    statements = []
    for text in source:
        try:
            body = ast.parse(text).body
        except SyntaxError as exc:
            raise InvalidInputError(f"not a Python statement: {text!r} ({exc.msg})") from None
        if len(body) != 1 or not isinstance(body[0], ast.Assign | ast.Expr):
            raise InvalidInputError(f"a program statement is one assignment or one expression, got {text!r}")
        node = body[0]
        binds = binds_kind = None
        if isinstance(node, ast.Expr):
            label, _ = _call_label(node.value, kinds)
        elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            label, binds_kind = _call_label(node.value, kinds)
            binds = node.targets[0].id
            if binds in NAMES:
                raise InvalidInputError(f"a program may not rebind {binds!r}: {text!r}")
            if binds_kind:
                kinds[binds] = binds_kind
            else:
                kinds.pop(binds, None)
        else:
            label = _target_label(node.targets[0], kinds)
        statements.append(Statement(text, label, binds, binds_kind))
    return tuple(statements)


def program_from_text(area: str, target: str, text: str) -> Program:
    """A program from a repro as :meth:`Program.repro` prints it (its set-up lines are skipped)."""
    setup = ("import ", "impl = ", "impl.reset()", "workdir = ")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith(setup)]
    return Program(area, target, tuple(_strip_comment(line) for line in lines))


def _strip_comment(line: str) -> str:
    """A statement without its trailing ``# note`` (found by tokenizing, so '#' in strings stays)."""
    node = ast.parse(line)
    end = node.body[0].end_col_offset if node.body else len(line)
    return line[:end].rstrip()
