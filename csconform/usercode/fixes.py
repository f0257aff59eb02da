"""The edits of the mechanical fixes: a keyword added to a call, a value replaced, an argument removed.

Each edit is computed from the syntax tree's positions (converted to character columns), so that a
fix lands where the finding points whatever the layout of the call: one line or many, with or
without a trailing comma.
"""

from __future__ import annotations

import ast

from csconform.findings.finding import Edit
from csconform.usercode.source import SourceFile


def _arguments(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """The call's arguments and keywords in the order they are written."""
    return sorted([*call.args, *call.keywords], key=lambda node: (node.lineno, node.col_offset))


def keyword_added(source: SourceFile, call: ast.Call, text: str) -> Edit:
    """Add ``text`` (``drop_last=True``) as the call's last argument."""
    arguments = _arguments(call)
    if arguments:
        line, column = source.end(arguments[-1])
        return Edit(line, column, line, column, f", {text}")
    line, column = source.end(call)  # just past the closing parenthesis
    return Edit(line, column - 1, line, column - 1, text)


def value_replaced(source: SourceFile, node: ast.expr, text: str) -> Edit:
    return source.replace(node, text)


def argument_removed(source: SourceFile, call: ast.Call, argument: ast.AST) -> Edit:
    """Remove one argument with the comma that separates it from its neighbour."""
    arguments = _arguments(call)
    index = next(i for i, node in enumerate(arguments) if node is argument)
    if index + 1 < len(arguments):
        (line, column), (end_line, end_column) = source.start(argument), source.start(arguments[index + 1])
    elif index > 0:
        (line, column), (end_line, end_column) = source.end(arguments[index - 1]), source.end(argument)
    else:
        (line, column), (end_line, end_column) = source.start(argument), source.end(argument)
    return Edit(line, column, end_line, end_column, "")


def arguments_cleared(source: SourceFile, call: ast.Call) -> Edit:
    """Call without arguments: ``ds.repeat(10)`` -> ``ds.repeat()``."""
    (line, column), (end_line, end_column) = source.end(call.func), source.end(call)
    return Edit(line, column, end_line, end_column, "()")
