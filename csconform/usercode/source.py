"""One Python file: its text, its syntax tree, and the places a finding points at.

A finding names a 1-based line and a 1-based column counted in characters, as editors count them;
``ast`` gives column offsets in UTF-8 bytes, so a line with non-ASCII text before the node would
shift the column. :class:`SourceFile` converts. A file that cannot be read or parsed (missing,
binary, not UTF-8, too large, not a regular file, a syntax error, nesting too deep for the parser)
is one :class:`~csconform.errors.UnreadableDocumentError` naming the file and the line.
"""

from __future__ import annotations

import ast
import os
import warnings
from dataclasses import dataclass, field

from csconform.documents import read_text
from csconform.errors import UnreadableDocumentError
from csconform.findings.finding import Edit, Location

MAX_SOURCE_BYTES = 4 * 2**20
"""Bound on one Python file: far above hand-written code (the Model Zoo's largest is under 200 KiB)."""


@dataclass
class SourceFile:
    path: str
    """The file as the user named it (or as the folder walk found it)."""
    text: str
    tree: ast.Module
    lines: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.lines = self.text.splitlines(keepends=True)

    def column(self, line: int, byte_offset: int) -> int:
        """The 1-based character column of ``byte_offset`` (a UTF-8 byte offset) on ``line``."""
        if not 1 <= line <= len(self.lines):
            return byte_offset + 1
        text = self.lines[line - 1]
        if text.isascii():
            return byte_offset + 1
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1

    def at(self, node: ast.AST) -> Location:
        """Where ``node`` starts."""
        line = getattr(node, "lineno", None)
        offset = getattr(node, "col_offset", None)
        if line is None:
            return Location()
        return Location(line=line, column=None if offset is None else self.column(line, offset))

    def end(self, node: ast.AST) -> tuple[int, int]:
        """The (line, character column) just past ``node``."""
        line, offset = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return line, self.column(line, offset)

    def start(self, node: ast.AST) -> tuple[int, int]:
        line, offset = node.lineno, node.col_offset  # type: ignore[attr-defined]
        return line, self.column(line, offset)

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node`` (one line of it at most, shortened), for messages."""
        text = ast.get_source_segment(self.text, node) or ast.unparse(node)
        text = " ".join(text.split())
        return text if len(text) <= 60 else text[:57] + "..."

    def replace(self, node: ast.AST, text: str) -> Edit:
        """An edit that replaces ``node`` by ``text``."""
        (line, column), (end_line, end_column) = self.start(node), self.end(node)
        return Edit(line, column, end_line, end_column, text)


def parse_source(path: str, text: str) -> SourceFile:
    """``text`` parsed as the Python file ``path``."""
    try:
        with warnings.catch_warnings():  # the file's own warnings (an invalid escape) are not lint's to print
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise UnreadableDocumentError(f"not valid Python: {exc.msg}", source=path, line=exc.lineno) from None
    except (RecursionError, MemoryError):
        raise UnreadableDocumentError("nested too deeply for the Python parser", source=path) from None
    return SourceFile(path, text, tree)


def read_source(path: str | os.PathLike[str]) -> SourceFile:
    """The Python file ``path``, read bounded and parsed."""
    return parse_source(str(path), read_text(path, MAX_SOURCE_BYTES, what="Python source file"))
