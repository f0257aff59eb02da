"""The mechanical fixes of validate's findings: edits of the file's text, which ``--fix`` shows as a diff.

* CONFIG-023: ``use_bfloat16: True`` becomes ``fp16_type: bfloat16`` (``False``: ``float16``), the key
  releases from 2.1.0 read instead, on the same line of the same section;
* CONFIG-007: a text float ``1e-4`` becomes ``1.0e-4``, the number every YAML reader reads.

An edit is made only where the finding's line holds exactly one such key or value; anything else is
left for the user (the finding stays, without an edit).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from csconform.documents import read_bytes
from csconform.findings.finding import Edit, Finding

USE_BFLOAT16 = re.compile(r"(?<![\w-])use_bfloat16\s*:\s*(?P<value>[^\s#,}]+)")
YAML_TRUE = ("true", "yes", "on")
YAML_FALSE = ("false", "no", "off")
TEXT_FLOAT_MANTISSA = re.compile(r"(?<![\w.+-])[-+]?[0-9]+(?=[eE][-+]?[0-9]+(?![\w.]))")


def _fp16_type(line: str, number: int) -> tuple[Edit, ...]:
    matches = list(USE_BFLOAT16.finditer(line))
    if len(matches) != 1:
        return ()
    value = matches[0]["value"].lower()
    if value not in YAML_TRUE + YAML_FALSE:
        return ()
    dtype = "bfloat16" if value in YAML_TRUE else "float16"
    start, end = matches[0].span()
    return (Edit(number, start + 1, number, end + 1, f"fp16_type: {dtype}"),)


def _decimal_point(line: str, number: int) -> tuple[Edit, ...]:
    matches = list(TEXT_FLOAT_MANTISSA.finditer(line.split("#", 1)[0]))
    if len(matches) != 1:
        return ()
    after_mantissa = matches[0].end() + 1
    return (Edit(number, after_mantissa, number, after_mantissa, ".0"),)


EDITS: dict[str, Callable[[str, int], tuple[Edit, ...]]] = {"CONFIG-023": _fp16_type, "CONFIG-007": _decimal_point}
"""Rule -> the edits that fix its finding, from the text of the finding's line and its number."""


def with_edits(findings: Sequence[Finding], path: Path | str) -> list[Finding]:
    """``findings`` with the edits that fix them where a rule has a mechanical fix (the file is read
    again only when one does)."""

    def fixable(finding: Finding) -> bool:
        return finding.rule in EDITS and finding.line is not None and not finding.edits

    if not any(fixable(f) for f in findings):
        return list(findings)
    lines = read_bytes(path, what="config").decode("utf-8-sig").splitlines()
    fixed = []
    for finding in findings:
        if fixable(finding) and finding.line is not None and finding.line <= len(lines):
            edits = EDITS[finding.rule](lines[finding.line - 1], finding.line)
            finding = dataclasses.replace(finding, edits=edits) if edits else finding
        fixed.append(finding)
    return fixed
