"""Silencing a finding the user has judged: inline comments and the project's configuration.

``# csconform: ignore[LR-101]`` at the end of a line silences that rule's findings on that line
(several rules separated by commas; ``# csconform: ignore`` alone silences every rule there). The
comment is the same in Python and YAML; JSON has no comments, so a ``config.json`` is silenced only
through the project's configuration (:mod:`csconform.findings.config`). Silenced findings are
counted, never hidden without a trace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from csconform.documents import read_text
from csconform.errors import UnreadableDocumentError
from csconform.findings.finding import FileReport, Finding

IGNORE_COMMENT = re.compile(r"#\s*csconform:\s*ignore(?:\[(?P<rules>[^\]]*)\])?")

ALL_RULES = None
"""The value of a line whose comment names no rule: every rule is silenced there."""


def ignored_on_lines(text: str) -> dict[int, frozenset[str] | None]:
    """Line (1-based) -> the rules its ``csconform: ignore`` comment names (None: every rule)."""
    ignored: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = IGNORE_COMMENT.search(line)
        if match is None:
            continue
        names = match.group("rules")
        ignored[number] = (
            ALL_RULES if names is None else frozenset(name.strip() for name in names.split(",") if name.strip())
        )
    return ignored


def comments_text(path: str | os.PathLike[str], what: str = "file") -> str | None:
    """The text of ``path`` whose ``csconform: ignore`` comments apply; None when it cannot be read
    (its report already says why)."""
    try:
        return read_text(path, what=what)
    except UnreadableDocumentError:
        return None


def suppress(report: FileReport, text: str | None, ignored_by_config: Callable[[str], bool]) -> None:
    """Drop from ``report`` the findings silenced on their line (``text`` is the file's, None when it
    has no comments) or by the configuration (``ignored_by_config(rule)``), counting them."""
    on_lines = ignored_on_lines(text) if text is not None else {}

    def silenced(finding: Finding) -> bool:
        if ignored_by_config(finding.rule):
            return True
        if finding.line is None or finding.line not in on_lines:
            return False
        rules = on_lines[finding.line]
        return rules is ALL_RULES or finding.rule in rules

    before = len(report.violations) + len(report.warnings)
    report.violations = [f for f in report.violations if not silenced(f)]
    report.warnings = [f for f in report.warnings if not silenced(f)]
    report.suppressed += before - len(report.violations) - len(report.warnings)
