"""Precision (CODE-020, CODE-021): mixed precision only, with the casts it inserts itself.

Training on the system keeps weights in float32 and computes in a 16-bit format; there is no double
precision (CODE-020: in the traced step, a model cast to it, the default dtype set to it; a schedule
computed in float64 on the host before training is not training), and the 16-bit casts are inserted
automatically, so a manual cast in the step is at best redundant (CODE-021, a warning).
"""

from __future__ import annotations

import ast

from csconform.usercode.scope import Scope, keyword, method_name
from csconform.usercode.values import COMPILED, DOUBLE_DTYPES, HALF_DTYPES, MODULE

HALF_CASTS = frozenset({"half", "bfloat16"})
DTYPE_CASTS = frozenset({"to", "type"})


def _in_comparison(scope: Scope, node: ast.AST) -> bool:
    """Whether ``node`` is compared with (``x.dtype == torch.float64``, ``dtype in (..., torch.float64)``)."""
    return any(isinstance(parent, ast.Compare) for parent in scope.ancestors(node))


def check_double_precision(scope: Scope) -> None:
    """CODE-020: 64-bit floats in the traced step (a dtype, a .double() cast), a model cast to them,
    or the default dtype set to them."""
    if not scope.module.mentions("float64", "double"):
        return
    for node in scope.nodes:
        what = None
        if isinstance(node, ast.Call):
            called = scope.called(node)
            method = method_name(node)
            model = (
                scope.value(node.func.value).kind in (MODULE, COMPILED)
                if isinstance(node.func, ast.Attribute)
                else False
            )
            if called == "torch.set_default_dtype" and node.args and scope.qualified(node.args[0]) in DOUBLE_DTYPES:
                what = f"torch.set_default_dtype({scope.qualified(node.args[0])})"
            elif model and (method == "double" or (method in DTYPE_CASTS and _dtype(scope, node, DOUBLE_DTYPES))):
                what = f"the model cast to 64 bits ({scope.text(node)})"
            elif scope.traced is not None and method == "double" and not node.args:
                what = ".double()"
        elif (
            scope.traced is not None
            and isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and scope.qualified(node) in DOUBLE_DTYPES
            and not _in_comparison(scope, node)
        ):
            what = f"{scope.qualified(node)} {scope.where()}"
        if what is not None:
            scope.refuse(
                "CODE-020",
                node,
                f"{what}: 64-bit floats; only mixed precision is supported for training (float32 weights, 16-bit "
                "computation)",
            )


def _dtype(scope: Scope, call: ast.Call, dtypes: frozenset[str]) -> str | None:
    """The dtype of ``dtypes`` a call is given (positionally or as ``dtype=``), or None."""
    dtype = keyword(call, "dtype")
    candidates = [*call.args, *([dtype.value] if dtype is not None else [])]
    return next((scope.qualified(c) for c in candidates if scope.qualified(c) in dtypes), None)


def check_half_casts(scope: Scope) -> None:
    """CODE-021 (inside the traced step): a manual cast to a 16-bit float."""
    if not scope.module.mentions("half", "float16"):
        return
    if scope.traced is None:
        return
    for call in scope.calls():
        method = method_name(call)
        if method in HALF_CASTS and not call.args:
            what = f".{method}()"
        elif method in DTYPE_CASTS and _dtype(scope, call, HALF_DTYPES):
            what = f".{method}({_dtype(scope, call, HALF_DTYPES)})"
        else:
            continue
        scope.warn(
            "CODE-021",
            call,
            f"a manual cast to 16 bits ({what}) {scope.where()}: mixed precision inserts the casts itself",
        )
