"""The mechanical fixes of validate's findings: edits of the file's text, which ``--fix`` shows as a diff.

* CONFIG-023: ``use_bfloat16: True`` becomes ``fp16_type: bfloat16`` (``False``: ``float16``), the key
  releases from 2.1.0 read instead, on the same line of the same section;
* CONFIG-007: a text float ``1e-4`` becomes ``1.0e-4``, the number every YAML reader reads;
* CONFIG-054: a phase of a schedule that training stops in the middle of is shortened to end where
  training stops (its ``total_iters``, ``steps`` or ``decay_steps``); only the last phase, or any
  phase of a flat-layout list, whose later phases have no milestones to move;
* CONFIG-005: a flat-layout file becomes the trainer layout, as the release judged converts it
  (:mod:`.convert`): one edit that replaces the whole file.

A line edit is made only where the finding's line holds exactly one such key or value; anything else
is left for the user (the finding stays, without an edit). The conversion replaces the whole file, so
it is offered once no line edit is pending (``--fix --in-place`` makes the line edits, the next run
converts), and not for a file the release's converter would stop on (no ``optimizer_type``, an
unknown LR scheduler): its CONFIG-005 finding stays without an edit.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from csconform.documents import read_bytes
from csconform.findings.finding import Edit, Finding
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.convert import ConversionError, convert, to_yaml
from csconform.userconfig.read_flat import framework_of
from csconform.userconfig.release_data import knowledge

USE_BFLOAT16 = re.compile(r"(?<![\w-])use_bfloat16\s*:\s*(?P<value>[^\s#,}]+)")
YAML_TRUE = ("true", "yes", "on")
YAML_FALSE = ("false", "no", "off")
TEXT_FLOAT_MANTISSA = re.compile(r"(?<![\w.+-])[-+]?[0-9]+(?=[eE][-+]?[0-9]+(?![\w.]))")


def _fp16_type(finding: Finding, line: str) -> tuple[Edit, ...]:
    matches = list(USE_BFLOAT16.finditer(line))
    if len(matches) != 1:
        return ()
    value = matches[0]["value"].lower()
    if value not in YAML_TRUE + YAML_FALSE:
        return ()
    dtype = "bfloat16" if value in YAML_TRUE else "float16"
    start, end = matches[0].span()
    return (Edit(finding.line or 0, start + 1, finding.line or 0, end + 1, f"fp16_type: {dtype}"),)


def _decimal_point(finding: Finding, line: str) -> tuple[Edit, ...]:
    matches = list(TEXT_FLOAT_MANTISSA.finditer(line.split("#", 1)[0]))
    if len(matches) != 1:
        return ()
    after_mantissa = matches[0].end() + 1
    return (Edit(finding.line or 0, after_mantissa, finding.line or 0, after_mantissa, ".0"),)


def _new_value(finding: Finding, line: str) -> tuple[Edit, ...]:
    """The value of the finding's key replaced by ``finding.new_value``, where the line holds the key once."""
    if finding.new_value is None or finding.key is None or finding.line is None:
        return ()
    key = re.escape(finding.key.rsplit(".", 1)[-1])
    matches = list(re.finditer(rf"(?<![\w-]){key}\s*:\s*(?P<value>[^\s#,}}]+)", line.split("#", 1)[0]))
    if len(matches) != 1:
        return ()
    start, end = matches[0].span("value")
    return (Edit(finding.line, start + 1, finding.line, end + 1, finding.new_value),)


def _trainer_layout(path: Path | str, text: str, release: str) -> tuple[Edit, ...]:
    """The whole file replaced by its conversion to the trainer layout (none for a TensorFlow file,
    which the trainer releases do not run, or where the release's converter would stop)."""
    if framework_of(Path(path)) == "tensorflow":
        return ()
    try:
        conversion = convert(ConfigFile.read(path), knowledge(release))
    except ConversionError:
        return ()
    command = knowledge(release).convert_command
    how = f"as {command} does" if command else "as the release converts it on load"
    converted = to_yaml(conversion, f"converted to the trainer layout for release {release} ({how})")
    lines = text.splitlines(keepends=True)
    return (Edit(1, 1, len(lines) + 1, 1, converted),)


EDITS: dict[str, Callable[[Finding, str], tuple[Edit, ...]]] = {"CONFIG-023": _fp16_type, "CONFIG-007": _decimal_point}
"""Rule -> the edits that fix its finding, from the text of the finding's line (a finding that names
its ``new_value`` is fixed by :func:`_new_value` whatever its rule)."""
FILE_EDITS: dict[str, Callable[[Path | str, str, str], tuple[Edit, ...]]] = {"CONFIG-005": _trainer_layout}
"""Rule -> the edits that fix its finding, from the file (its path and text) and the release judged."""


def with_edits(findings: Sequence[Finding], path: Path | str, release: str) -> list[Finding]:
    """``findings`` with the edits that fix them where a rule has a mechanical fix for ``release``
    (the file is read again only when one does)."""

    def by_line(finding: Finding) -> bool:
        return (finding.rule in EDITS or finding.new_value is not None) and finding.line is not None

    def fixable(finding: Finding) -> bool:
        return (by_line(finding) or finding.rule in FILE_EDITS) and not finding.edits

    def line_edits(finding: Finding, line: str) -> tuple[Edit, ...]:
        return _new_value(finding, line) if finding.new_value is not None else EDITS[finding.rule](finding, line)

    if not any(fixable(f) for f in findings):
        return list(findings)
    text = read_bytes(path, what="config").decode("utf-8-sig")
    lines = text.splitlines()
    fixed = []
    for finding in findings:
        edits: tuple[Edit, ...] = ()
        if fixable(finding) and by_line(finding) and finding.line is not None and finding.line <= len(lines):
            edits = line_edits(finding, lines[finding.line - 1])
        fixed.append(dataclasses.replace(finding, edits=edits) if edits else finding)
    if any(finding.edits for finding in fixed):
        return fixed
    return [
        dataclasses.replace(finding, edits=edits)
        if fixable(finding) and finding.rule in FILE_EDITS and (edits := FILE_EDITS[finding.rule](path, text, release))
        else finding
        for finding in fixed
    ]
