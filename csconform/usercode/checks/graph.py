"""The static graph (CODE-001 to CODE-005): what changes or breaks the traced graph.

The step's Python runs while the graph is traced; on the system, later steps replay the graph
without it. So a branch on a tensor's value (CODE-001) would need a different graph for other
data, and a value read inside the step (CODE-002) is not there to read: tensors are computed at the
end of the step, when step closures run. The wafer is programmed once per run, so a model is
compiled once (CODE-003), training and evaluation were separate runs before 1.8.0 (CODE-004), and
a step uses one compiled model (CODE-005).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from csconform.usercode.names import last
from csconform.usercode.scope import Scope, method_name
from csconform.usercode.values import COMPILE_FUNCTIONS, COMPILED, ESTIMATOR, VALUE_READS

TRAIN_AND_EVAL = "train_and_eval"
TRAIN_AND_EVAL_CALLS = ("train_and_eval", "train_and_evaluate")
LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
BUILTIN_READS = frozenset({"float", "int", "bool", "complex", "str", "repr", "format"})


def _tests(scope: Scope) -> Iterator[tuple[ast.expr, str]]:
    """Every condition of the scope, with the statement it decides."""
    for node in scope.nodes:
        if isinstance(node, ast.If):
            yield node.test, "if"
        elif isinstance(node, ast.While):
            yield node.test, "while"
        elif isinstance(node, ast.Assert):
            yield node.test, "assert"
        elif isinstance(node, ast.IfExp):
            yield node.test, "conditional expression"
        elif isinstance(node, ast.comprehension):
            for test in node.ifs:
                yield test, "comprehension condition"


def check_control_flow(scope: Scope) -> None:
    """CODE-001: a condition on a tensor's value inside the traced step."""
    for test, statement in _tests(scope):
        if scope.value(test).depends_on_data:
            scope.refuse(
                "CODE-001",
                test,
                f"Python {statement} on a tensor's value ({scope.text(test)}) {scope.where()}: the branch "
                "depends on the data, so the graph would change between steps",
            )


def _is_logging(scope: Scope, call: ast.Call) -> bool:
    if scope.called(call).startswith(("logging.", "warnings.warn")) or scope.called(call) == "print":
        return True
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr in LOGGING_METHODS
        and "log" in (scope.qualified(func.value) or "").lower()
    )


def _formats_a_tensor(scope: Scope, call: ast.Call) -> bool:
    """``"loss {}".format(loss)`` with a tensor among the arguments."""
    if method_name(call) != "format" or not isinstance(call.func, ast.Attribute):
        return False
    if not isinstance(call.func.value, ast.Constant):
        return False
    return any(scope.value(a).tensorish for a in [*call.args, *(k.value for k in call.keywords)])


def _reads(scope: Scope) -> Iterator[tuple[ast.AST, str]]:
    """Every place the scope copies a tensor's value to the host, with what it does."""
    for node in scope.nodes:
        if isinstance(node, ast.Call):
            method = method_name(node)
            if method in VALUE_READS and isinstance(node.func, ast.Attribute):
                receiver = scope.value(node.func.value)
                if receiver.tensorish or (method != "numpy" and receiver.kind in ("unknown", "learning-rate")):
                    yield node, f"{method}() copies a tensor's value to the host"
                continue
            called = scope.called(node)
            if called in BUILTIN_READS and node.args and scope.value(node.args[0]).tensorish:
                yield node, f"{called}() of a tensor reads its value"
            elif _is_logging(scope, node) and any(scope.value(a).tensorish for a in node.args):
                yield node, f"{last(called) or method}() of a tensor reads its value"
            elif _formats_a_tensor(scope, node):
                yield node, "formatting a tensor into a string reads its value"
        elif isinstance(node, ast.FormattedValue) and scope.value(node.value).tensorish:
            # the expression in the braces: Python before 3.12 places the FormattedValue at the f-string
            yield node.value, "formatting a tensor into an f-string reads its value"
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and scope.value(node.right).tensorish
        ):
            yield node, "formatting a tensor into a string reads its value"


def check_value_reads(scope: Scope) -> None:
    """CODE-002: a tensor's value read inside the traced step, outside a step closure."""
    for node, what in _reads(scope):
        scope.refuse(
            "CODE-002",
            node,
            f"{scope.text(node)}: {what} {scope.where()}, outside a step closure; tensors are computed at the "
            "end of the step",
        )


def check_compiles(scope: Scope) -> None:
    """CODE-003: a compile in a loop, or in the traced step."""
    if not scope.module.mentions("compile"):
        return
    for call in scope.calls():
        called = scope.called(call)
        estimator_compile = (
            method_name(call) == "compile"
            and isinstance(call.func, ast.Attribute)
            and scope.value(call.func.value).kind == ESTIMATOR
        )
        if called not in COMPILE_FUNCTIONS and not estimator_compile:
            continue
        where = "in a loop" if scope.in_loop(call) else scope.where() if scope.traced else ""
        if where:
            scope.refuse(
                "CODE-003",
                call,
                f"{scope.text(call.func)}() {where}: the wafer is programmed once per run, so a model is compiled once",
            )


def _mode_values(scope: Scope) -> Iterator[ast.Constant]:
    """The string "train_and_eval" where it is given as a value (not compared with, not a choice in a list)."""
    for node in scope.nodes:
        candidates: list[ast.expr] = []
        if isinstance(node, ast.Call):
            candidates = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and not _names_a_constant(node):
            candidates = [node.value]
        elif isinstance(node, ast.Dict):
            candidates = list(node.values)
        elif isinstance(node, ast.Return) and node.value is not None:
            candidates = [node.value]
        elif isinstance(node, ast.arguments):
            candidates = [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
        for candidate in candidates:
            if isinstance(candidate, ast.Constant) and candidate.value == TRAIN_AND_EVAL:
                yield candidate


def _names_a_constant(node: ast.Assign | ast.AnnAssign) -> bool:
    """``TRAIN_AND_EVAL = "train_and_eval"``: a name for the mode (in upper case), not a use of it."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return all(isinstance(t, ast.Name) and t.id.isupper() for t in targets)


def check_train_and_eval(scope: Scope) -> None:
    """CODE-004: training and evaluation in one run (releases before 1.8.0)."""
    if not scope.module.mentions("train_and_eval"):
        return
    for constant in _mode_values(scope):
        scope.refuse(
            "CODE-004",
            constant,
            'mode "train_and_eval": the fabric programmed for training cannot be reprogrammed for evaluation in '
            "the same run",
        )
    for call in scope.calls():
        name = method_name(call) or last(scope.called(call))
        if name in TRAIN_AND_EVAL_CALLS:
            scope.refuse(
                "CODE-004",
                call,
                f"{scope.text(call.func)}() trains and evaluates in one run: the fabric programmed for training "
                "cannot be reprogrammed for evaluation",
            )


def compiled_model_calls(scope: Scope) -> Iterator[tuple[ast.Call, object]]:
    """The calls of a compiled model in the scope, with the compile call that made each (CODE-005)."""
    for call in scope.calls():
        if isinstance(call.func, ast.Name | ast.Attribute):
            model = scope.value(call.func)
            if model.kind == COMPILED and model.ref is not None:
                yield call, model.ref
