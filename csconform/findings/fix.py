"""Mechanical fixes: the edits findings carry, made on the text and shown as a unified diff.

A fix is shown before it is made: ``--fix`` prints the diff and writes nothing; only ``--fix
--in-place`` rewrites the user's file, atomically and only if the file is still the one that was
read. Edits that overlap an earlier one are left for a second run (the finding stays reported).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from csconform.findings.finding import Edit, Finding


@dataclass(frozen=True)
class FixedText:
    text: str
    applied: int
    """How many findings' edits were made."""


def _offsets(text: str) -> list[int]:
    """The offset at which each line (1-based index - 1) starts, and one past the end."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _offset(starts: list[int], line: int, column: int) -> int:
    return starts[min(line, len(starts)) - 1] + column - 1


def apply_fixes(text: str, findings: Sequence[Finding]) -> FixedText:
    """``text`` with the edits of every finding made, each finding's edits all or none, in order of
    place; a finding whose edits overlap one already made is skipped."""
    starts = _offsets(text)
    chosen: list[tuple[int, int, Edit]] = []
    applied = 0
    for finding in sorted((f for f in findings if f.edits), key=lambda f: (f.edits[0].line, f.edits[0].column)):
        spans = [
            (_offset(starts, e.line, e.column), _offset(starts, e.end_line, e.end_column), e) for e in finding.edits
        ]
        if any(_overlap(span, taken) for span in spans for taken in chosen):
            continue
        chosen.extend(spans)
        applied += 1
    for start, end, edit in sorted(chosen, key=lambda span: span[0], reverse=True):
        text = text[:start] + edit.text + text[end:]
    return FixedText(text, applied)


def _overlap(a: tuple[int, int, Edit], b: tuple[int, int, Edit]) -> bool:
    """Whether two replacements touch the same text (two insertions at one place count)."""
    return (a[0] < b[1] and b[0] < a[1]) or a[0] == b[0]


def unified_diff(path: str, before: str, after: str) -> str:
    """The change as ``diff -u`` shows it (``a/`` and ``b/`` prefixes, as git and patch read)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )
