"""A tiny evaluator for the arithmetic of the expected values (numbers, + - * / **, cos, sqrt, pi).

The expected parameter counts and learning rates are written as arithmetic from the documented
formulas; evaluating them here keeps the arithmetic visible in the data and independent of the code
under test. Anything but arithmetic is refused.
"""

from __future__ import annotations

import ast
import math
import operator

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
FUNCTIONS = {"cos": math.cos, "sqrt": math.sqrt}
CONSTANTS = {"pi": math.pi}


def evaluate(text: str) -> float:
    """The value of an arithmetic expression such as ``2e-5 + 1.8e-4 * 0.5 * (1 + cos(pi * 9654 / 23988))``."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.operand))
        if isinstance(node, ast.Name) and node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            return FUNCTIONS[node.func.id](*(value(arg) for arg in node.args))
        raise ValueError(f"not arithmetic: {ast.dump(node)}")

    return value(ast.parse(str(text), mode="eval"))
