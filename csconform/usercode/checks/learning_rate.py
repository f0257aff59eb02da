"""Learning rates (CODE-010 to CODE-012): a function of the global step, a tensor in the optimizer.

The system runs the schedule itself, as a function of the global step (in weight-streaming mode, a
tensor computed from it), so the PyTorch way of computing a rate and writing it into the
optimizer's param groups does not work: no write to ``group["lr"]`` (CODE-010), none of
torch.optim.lr_scheduler's schedulers (CODE-011), and an optimizer that turns the rate into a
Python number cannot take a tensor (CODE-012).
"""

from __future__ import annotations

import ast

from csconform.usercode.analysis import in_training_loop
from csconform.usercode.names import last
from csconform.usercode.scope import Scope, method_name
from csconform.usercode.values import CSTORCH_LR_SCHEDULERS, LEARNING_RATE, PARAM_GROUP, TORCH_LR_SCHEDULERS

SCALAR_CONVERSIONS = frozenset({"float", "int", "round"})


def _is_lr_entry(scope: Scope, target: ast.expr) -> bool:
    return (
        isinstance(target, ast.Subscript) and _is_lr_key(target.slice) and scope.value(target.value).kind == PARAM_GROUP
    )


def _sets_lr(scope: Scope, call: ast.Call) -> bool:
    """``group.update(lr=...)``, ``group.update({"lr": ...})`` or ``group.__setitem__("lr", ...)`` on a param group."""
    if not isinstance(call.func, ast.Attribute) or scope.value(call.func.value).kind != PARAM_GROUP:
        return False
    if call.func.attr == "update":
        return any(k.arg == "lr" for k in call.keywords) or any(
            isinstance(a, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "lr" for k in a.keys)
            for a in call.args
        )
    return call.func.attr == "__setitem__" and bool(call.args) and _is_lr_key(call.args[0])


def _is_lr_key(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == "lr"


def _every_step(scope: Scope, node: ast.AST) -> bool:
    """Whether the write is made every training step (not once, while the optimizer is set up)."""
    if scope.traced is not None or in_training_loop(scope.module, node):
        return True
    return scope.function is not None and scope.analysis.runs_every_step(scope.function)


def check_param_group_writes(scope: Scope) -> None:
    """CODE-010: a learning rate written into an optimizer's param group."""
    if not scope.module.mentions("param_groups"):
        return
    for node in scope.nodes:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and _sets_lr(scope, node):
            targets = [node]
        for target in targets:
            if (isinstance(target, ast.Call) or _is_lr_entry(scope, target)) and _every_step(scope, node):
                scope.refuse(
                    "CODE-010",
                    target,
                    f"the learning rate is written into an optimizer's param group ({scope.text(target)}): the "
                    "system does not support setting rates in the param groups; the schedule is a function of the "
                    "global step",
                )


def check_torch_schedulers(scope: Scope) -> None:
    """CODE-011: a scheduler of torch.optim.lr_scheduler."""
    if not scope.module.mentions("lr_scheduler"):
        return
    for call in scope.calls():
        called = scope.called(call)
        module, _, name = called.rpartition(".")
        if module != TORCH_LR_SCHEDULERS or not name[:1].isupper():
            continue
        same = f"cstorch.optim.lr_scheduler.{name}" if name in CSTORCH_LR_SCHEDULERS else None
        scope.refuse(
            "CODE-011",
            call,
            f"torch.optim.lr_scheduler.{name} sets scalar rates in the optimizer's param groups, which the system "
            "does not support",
            fix=f"Use {same} instead; the rate is a function of the global step." if same else None,
        )


def _optimizer_class(scope: Scope) -> bool:
    function = scope.function
    if function is None or function.owner is None:
        return False
    return any(last(base).endswith("Optimizer") for base in scope.analysis.project.base_names(function.owner))


def _compares_the_rate(scope: Scope, node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare) or all(
        isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops
    ):
        return False
    return any(scope.value(part).kind == LEARNING_RATE for part in (node.left, *node.comparators))


def check_scalar_learning_rates(scope: Scope) -> None:
    """CODE-012: an optimizer that turns the learning rate into a Python number."""
    if not scope.module.mentions("param_groups"):
        return
    if not _optimizer_class(scope):
        return
    for node in scope.nodes:
        what = None
        if isinstance(node, ast.Call):
            called = scope.called(node)
            arguments = [*node.args, *(k.value for k in node.keywords)]
            rates = [a for a in arguments if scope.value(a).kind == LEARNING_RATE]
            if rates and (called in SCALAR_CONVERSIONS or called.startswith("math.")):
                what = f"{called}() of the learning rate"
            elif (
                method_name(node) in ("item", "tolist")
                and isinstance(node.func, ast.Attribute)
                and scope.value(node.func.value).kind == LEARNING_RATE
            ):
                what = f".{method_name(node)}() of the learning rate"
        elif _compares_the_rate(scope, node):
            what = "a Python comparison with the learning rate"
        if what is not None:
            scope.refuse(
                "CODE-012",
                node,
                f"{what} ({scope.text(node)}) in an optimizer: in weight-streaming mode the rate is a tensor that "
                "depends on the global step",
            )
