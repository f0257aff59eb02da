"""The GradScaler's order (CODE-050 to CODE-052): scale, backward, unscale_, clip, step, update.

The calls of a step are followed in the order they run, through both branches of every ``if``, a
loop's body run zero, one and two times, and into the helpers of the run that the step calls (so
that ``clip_and_step(optimizer, scaler)`` counts). Each path keeps what has happened on it
(:class:`State`); a call is reported when it is out of place on some path. A step without its update
is reported where the sequence is complete: in a function no other function of the run calls (a
helper may leave the update to its caller).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from csconform.usercode.analysis import CallEdge
from csconform.usercode.infer import Facts
from csconform.usercode.project import Function, Module
from csconform.usercode.scope import Scope
from csconform.usercode.values import AMP_OPTIMIZER_STEP, CLIPPING_FUNCTIONS, SCALED_LOSS, SCALER

MAX_INLINING = 3
EVENT_METHODS = frozenset({"scale", "unscale_", "step", "update", "backward"})


@dataclass(frozen=True)
class State:
    """What has happened on one path of the step."""

    scaled: bool = False
    backward_unscaled: bool = False
    """A backward() of a loss no GradScaler scaled, before any scale()."""
    unscaled: bool = False
    stepped: bool = False
    pending_step: ast.Call | None = None
    """The scaler.step() not yet followed by update()."""
    pending_anchor: ast.AST | None = None
    """Where to report the pending step in the file being checked (the step, or the call leading to it)."""


@dataclass
class _Walk:
    scope: Scope
    reported: set[tuple[str, int]] = field(default_factory=set)

    def report(self, rule: str, node: ast.AST, message: str) -> None:
        if (rule, id(node)) not in self.reported:
            self.reported.add((rule, id(node)))
            self.scope.refuse(rule, node, message)


@dataclass(frozen=True)
class _Context:
    """The function being followed: its values, its resolved calls, where its findings point."""

    module: Module
    facts: Facts
    edges: dict[int, CallEdge]
    anchor: ast.AST | None
    """None: the function being checked; else the call in it through which this helper was reached."""
    depth: int


def _relevant(function: Function) -> bool:
    """Whether the function calls anything that matters to a GradScaler (skips the rest cheaply)."""
    for node in function.nodes:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in EVENT_METHODS:
                return True
            name = function.module.imports.qualified(func) or ""
            if name in CLIPPING_FUNCTIONS or name == AMP_OPTIMIZER_STEP:
                return True
    return False


def check_grad_scaler_order(scope: Scope) -> None:
    """CODE-050 to CODE-052 for the calls of one function (and of the helpers it calls)."""
    analysis = scope.analysis
    function = scope.function
    if function is None or not analysis.project.mentions("GradScaler") or not _relevant(function):
        return
    edges = {id(e.node): e for e in analysis.summary(function, analysis.params_of(function)).calls}
    walk = _Walk(scope)
    fall, returned = _block(walk, function.node.body, {State()}, _Context(scope.module, scope.facts, edges, None, 0))
    pending = [s for s in fall | returned if s.pending_step is not None and s.pending_anchor is not None]
    if pending and (analysis.is_trace_step(function) or not analysis.is_called(function)):
        for state in pending:
            if state.pending_anchor is not None:
                walk.report(
                    "CODE-050",
                    state.pending_anchor,
                    f"{scope.text(state.pending_anchor)} is not followed by scaler.update(): the loss scale is "
                    "updated once per step, after every optimizer's step",
                )


def _block(
    walk: _Walk, body: Iterable[ast.stmt], states: set[State], context: _Context
) -> tuple[set[State], set[State]]:
    """The states at the end of the block (falling through, and returned)."""
    returned: set[State] = set()
    for statement in body:
        if not states:
            break
        states, more = _statement(walk, statement, states, context)
        returned |= more
    return states, returned


def _statement(walk: _Walk, node: ast.stmt, states: set[State], context: _Context) -> tuple[set[State], set[State]]:  # noqa: C901
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return states, set()
    if isinstance(node, ast.If):
        states = _expression(walk, node.test, states, context)
        then, r1 = _block(walk, node.body, states, context)
        other, r2 = _block(walk, node.orelse, states, context)
        return then | other, r1 | r2
    if isinstance(node, ast.For | ast.AsyncFor | ast.While):
        head = node.iter if isinstance(node, ast.For | ast.AsyncFor) else node.test
        states = _expression(walk, head, states, context)
        once, r1 = _block(walk, node.body, states, context)
        twice, r2 = _block(walk, node.body, once, context)
        after, r3 = _block(walk, node.orelse, states | once | twice, context)
        return after, r1 | r2 | r3
    if isinstance(node, ast.Try | ast.TryStar):
        body, r1 = _block(walk, node.body + node.orelse, states, context)
        handled: set[State] = set()
        returned = set(r1)
        for handler in node.handlers:
            end, more = _block(walk, handler.body, states | body, context)
            handled |= end
            returned |= more
        final, r2 = _block(walk, node.finalbody, body | handled, context)
        return final, returned | r2
    if isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            states = _expression(walk, item.context_expr, states, context)
        return _block(walk, node.body, states, context)
    if isinstance(node, ast.Return):
        if node.value is not None:
            states = _expression(walk, node.value, states, context)
        return set(), states
    if isinstance(node, ast.Raise):
        return set(), set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            states = _expression(walk, child, states, context)
    return states, set()


def _expression(walk: _Walk, node: ast.expr, states: set[State], context: _Context) -> set[State]:
    """The states after evaluating ``node``: its parts first, then the call it is."""
    if isinstance(node, ast.Lambda):
        return states
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            states = _expression(walk, child, states, context)
        elif isinstance(child, ast.keyword):
            states = _expression(walk, child.value, states, context)
    if isinstance(node, ast.Call):
        states = {after for state in states for after in _event(walk, node, state, context)}
        edge = context.edges.get(id(node))
        if edge is not None and context.depth < MAX_INLINING and _relevant(edge.callee):
            states = _inlined(walk, node, edge, states, context)
    return states


def _inlined(walk: _Walk, node: ast.Call, edge: CallEdge, states: set[State], context: _Context) -> set[State]:
    analysis = walk.scope.analysis
    callee = edge.callee
    facts = analysis.facts(callee, edge.params)
    edges = {id(e.node): e for e in analysis.summary(callee, edge.params).calls}
    same_file = callee.module is walk.scope.module and context.anchor is None
    anchor = None if same_file else (context.anchor or node)
    inner = _Context(callee.module, facts, edges, anchor, context.depth + 1)
    fall, returned = _block(walk, callee.node.body, states, inner)
    return fall | returned


def _event(walk: _Walk, call: ast.Call, state: State, context: _Context) -> list[State]:  # noqa: C901
    func = call.func
    name = context.module.imports.qualified(func) or ""
    place = context.anchor or call
    if name == AMP_OPTIMIZER_STEP:
        return [replace(state, scaled=True, unscaled=True, stepped=True, pending_step=None, pending_anchor=None)]
    if name in CLIPPING_FUNCTIONS:
        if state.scaled and not state.unscaled and state.pending_step is None:
            walk.report(
                "CODE-051",
                place,
                f"{walk.scope.text(place)} clips the gradients before scaler.unscale_(optimizer): it clips the "
                "scaled gradients",
            )
        return [state]
    if not isinstance(func, ast.Attribute):
        return [state]
    receiver = context.facts.value(func.value)
    method = func.attr
    if method == "backward" and receiver.kind != SCALER:
        if receiver == SCALED_LOSS or state.scaled:
            return [state]
        return [replace(state, backward_unscaled=True)]
    if receiver.kind != SCALER:
        return [state]
    if method == "scale":
        if state.backward_unscaled:
            walk.report(
                "CODE-052",
                place,
                f"{walk.scope.text(place)} after backward(): the gradients were computed from the unscaled loss",
            )
        return [replace(state, scaled=True)]
    if method == "unscale_":
        if state.pending_step is not None:
            walk.report("CODE-052", place, f"{walk.scope.text(place)} after scaler.step(): unscale_ comes before step")
        return [replace(state, unscaled=True)]
    if method == "step":
        if state.pending_step is not None:
            walk.report(
                "CODE-052",
                place,
                f"{walk.scope.text(place)}: a second scaler.step() before scaler.update()",
            )
        return [replace(state, stepped=True, pending_step=call, pending_anchor=place)]
    if method == "update":
        if state.scaled and not state.stepped:
            walk.report("CODE-052", place, f"{walk.scope.text(place)} before scaler.step(optimizer): update comes last")
        return [replace(state, pending_step=None, pending_anchor=None)]
    return [state]
