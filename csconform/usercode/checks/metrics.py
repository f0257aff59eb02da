"""Eval metrics (CODE-030): a metric returns its single final value, nothing more.

A 1.x CBMetric that gathers its state on the host (``update_on_host``) computes its result there,
from values already fetched, and is not limited (the Model Zoo's own ROUGE metric returns three).
"""

from __future__ import annotations

import ast

from csconform.usercode.names import last
from csconform.usercode.scope import Scope

COLLECTIONS = {
    ast.Tuple: "tuple",
    ast.List: "list",
    ast.Set: "set",
    ast.Dict: "dict",
    ast.ListComp: "list",
    ast.SetComp: "set",
    ast.DictComp: "dict",
}


def _is_metric_compute(scope: Scope) -> bool:
    function = scope.function
    if function is None or function.owner is None or function.name != "compute" or not scope.module.mentions("Metric"):
        return False
    project = scope.analysis.project
    if any("update_on_host" in cls.methods for cls in project.ancestors(function.owner)):
        return False  # a 1.x CBMetric gathering its state on the host computes there
    return any(last(base).endswith("Metric") for base in project.base_names(function.owner))


def _collection(scope: Scope, value: ast.expr) -> str | None:
    """The kind of collection ``value`` is (written there, or assigned to the name returned)."""
    if type(value) in COLLECTIONS:
        return COLLECTIONS[type(value)]
    if isinstance(value, ast.Name):
        for node in scope.nodes:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
                and type(node.value) in COLLECTIONS
            ):
                return COLLECTIONS[type(node.value)]
    return None


def check_metric_results(scope: Scope) -> None:
    """CODE-030: a metric's compute() that returns several values."""
    if not _is_metric_compute(scope):
        return
    owner = scope.function.owner.name if scope.function and scope.function.owner else "the metric"
    for node in scope.nodes:
        if isinstance(node, ast.Return) and node.value is not None:
            collection = _collection(scope, node.value)
            if collection is not None:
                scope.refuse(
                    "CODE-030",
                    node,
                    f"{owner}.compute() returns a {collection}: eval metrics may return only their single final value",
                )
