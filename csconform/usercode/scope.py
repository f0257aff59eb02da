"""One function (or a module's top level) as the checks see it: its nodes, their values, its context.

A check is a walk over :attr:`Scope.nodes` asking of each node what it is
(:meth:`Scope.value`, :meth:`Scope.qualified`), whether it is inside a loop, whether the function
runs inside the traced step (:attr:`Scope.traced`) and where to point (:meth:`Scope.at`). A nested
function or class is a scope of its own and is left out of its parent's nodes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from csconform.findings.collect import Findings
from csconform.findings.finding import Location
from csconform.usercode.analysis import Analysis, Traced
from csconform.usercode.infer import Facts
from csconform.usercode.project import Function, Module
from csconform.usercode.values import UNKNOWN_VALUE, Value


@dataclass
class Scope:
    module: Module
    function: Function | None
    """None: the module's top-level statements."""
    analysis: Analysis
    found: Findings
    traced: Traced | None = None
    _called: dict[int, str] = field(default_factory=dict, repr=False)
    _facts: Facts | None = field(default=None, repr=False)

    @property
    def facts(self) -> Facts:
        """The values of the scope's expressions (walked when a check first asks: most checks of
        most functions never need them)."""
        if self._facts is None:
            function = self.function
            self._facts = (
                self.analysis.facts(function) if function is not None else self.analysis.module_facts(self.module)
            )
        return self._facts

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the scope's own code, in source order."""
        return self.function.nodes if self.function is not None else self.module.nodes

    def in_loop(self, node: ast.AST) -> bool:
        """Whether ``node`` is inside the body of a for or while loop of the scope."""
        return id(node) in self.module.in_loop

    # --- questions --------------------------------------------------------------------------------

    @property
    def path(self) -> str:
        return self.module.path

    @property
    def uses_tensorflow(self) -> bool:
        return self.module.uses_tensorflow

    def value(self, node: ast.AST) -> Value:
        return self.facts.value(node) if isinstance(node, ast.expr) else UNKNOWN_VALUE

    def qualified(self, node: ast.expr) -> str | None:
        return self.module.imports.qualified(node)

    def called(self, node: ast.Call) -> str:
        """The qualified name of the function a call calls ('' when it is not a name)."""
        name = self._called.get(id(node))
        if name is None:
            name = self._called[id(node)] = self.qualified(node.func) or ""
        return name

    def at(self, node: ast.AST) -> Location:
        return self.module.source.at(node)

    def refuse(self, rule_id: str, node: ast.AST, message: str | None = None, **details: Any) -> None:
        """Report ``rule_id`` at ``node`` (see :meth:`Findings.refuse`), unless the node runs only
        off the system: every rule of lint is about the CS system."""
        if not self.off_the_system(node):
            self.found.refuse(rule_id, self.at(node), message, **details)

    def warn(self, rule_id: str, node: ast.AST, message: str | None = None, **details: Any) -> None:
        if not self.off_the_system(node):
            self.found.warn(rule_id, self.at(node), message, **details)

    def off_the_system(self, node: ast.AST) -> bool:
        """Whether ``node`` runs only when the code is not on the CS system: under ``if not
        cm.use_cs():``, in the ``else`` of ``if backend.is_csx:``, under ``if target_device ==
        DeviceType.GPU:`` and the like."""
        child = node
        for parent in self.ancestors(node):
            if isinstance(parent, ast.If):
                if child in parent.body and system_test(parent.test) is False:
                    return True
                if child in parent.orelse and system_test(parent.test) is True:
                    return True
            child = parent
        return False

    def text(self, node: ast.AST) -> str:
        return self.module.source.segment(node)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        current = self.module.parents.get(id(node))
        while current is not None:
            yield current
            current = self.module.parents.get(id(current))

    def calls(self) -> list[ast.Call]:
        return self.function.calls if self.function is not None else self.module.calls

    def where(self) -> str:
        """Where the scope runs, for a message: ``in the traced step train_step`` or ``in
        helper(), which the traced step train_step calls``."""
        if self.traced is None or self.function is None:
            return ""
        root = self.traced.root
        step = (
            f"the model's forward {_label(root)}"
            if self.analysis.is_forward(root) and not self.analysis.is_trace_step(root)
            else f"the traced step {_label(root)}"
        )
        if root is self.function:
            return f"in {step}"
        return f"in {_label(self.function)}, which {step} calls"

    def none_on_every_path(self, node: ast.expr) -> bool:
        """Whether ``node`` is None, an empty collection, or a name only ever assigned those here."""
        if _is_empty(node):
            return True
        if not isinstance(node, ast.Name):
            return False
        assigned = [
            s.value
            for s in self.nodes
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in s.targets)
        ]
        parameters = [] if self.function is None else [p.arg for p in self.function.parameters]
        return bool(assigned) and node.id not in parameters and all(_is_empty(v) for v in assigned)


CS_PREDICATES = frozenset({"use_cs", "is_cs", "is_csx", "is_appliance"})
"""Names of the tests for running on the CS system (the 1.x ``cm.use_cs()``, 2.x ``backend.is_csx``)."""
OFF_PREDICATES = frozenset({"is_gpu", "is_cpu", "use_gpu", "use_cpu"})
CS_DEVICES = frozenset({"CSX", "CS"})
OTHER_DEVICES = frozenset({"CPU", "GPU"})


def system_test(test: ast.expr) -> bool | None:
    """True: ``test`` holds on the CS system only; False: it holds off the system only; None: neither known."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = system_test(test.operand)
        return None if inner is None else not inner
    target = test.func if isinstance(test, ast.Call) else test
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    if name in CS_PREDICATES:
        return True
    if name in OFF_PREDICATES:
        return False
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq):
        devices = {_device(part) for part in (test.left, *test.comparators)}
        equal = isinstance(test.ops[0], ast.Eq)
        if devices & CS_DEVICES:
            return equal
        if devices & OTHER_DEVICES:
            return not equal if equal else None  # == GPU: off; != GPU: may be CPU or the system
    return None


def _device(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr.upper()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.upper()
    return ""


def _is_empty(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, ast.List | ast.Tuple | ast.Dict) and not (
        node.keys if isinstance(node, ast.Dict) else node.elts
    )


def _label(function: Function) -> str:
    return f"{function.owner.name}.{function.name}" if function.owner is not None else function.name


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def argument(call: ast.Call, name: str, position: int | None) -> ast.expr | None:
    """The argument given for the parameter ``name`` (by keyword, or at ``position``)."""
    given = keyword(call, name)
    if given is not None:
        return given.value
    if (
        position is not None
        and len(call.args) > position
        and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
    ):
        return call.args[position]
    return None


def has_unpacking(call: ast.Call) -> bool:
    """Whether the call passes ``*args`` or ``**kwargs`` (then what it passes is not known)."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def method_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else ""


def is_constant(node: ast.expr | None, *values: object) -> bool:
    return (
        isinstance(node, ast.Constant)
        and any(node.value is v or node.value == v for v in values)
        and (type(node.value) in {type(v) for v in values})
    )
