"""Findings in the forms the tools around a user's code read.

- ``text``: one line per finding as compilers and ruff print them (``path:line:col: RULE [level]
  message``), its fix on the next line, so an editor or a terminal jumps to the place;
- ``json``: one object with ``files`` (each with ``file``, ``outcome``, ``violations``,
  ``warnings``) and ``summary`` — the schema is ``csconform/findings/report.schema.json``;
- ``sarif``: SARIF 2.1.0, which code-scanning services (GitHub's among them) take;
- ``github``: GitHub Actions workflow commands, shown as annotations on the changed lines.

``validate`` and ``lint`` both print through here; a command adds its own fields to a file's JSON
(validate's plan and schedule) by returning them from ``FileReport.as_dict``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from csconform import __version__
from csconform.findings.finding import FileReport, Finding
from csconform.spec.model import Spec

FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/csconform/"


def location_text(finding: Finding) -> str:
    """``path:line:col`` (what is unknown is left out)."""
    where = finding.path
    if finding.line is not None:
        where += f":{finding.line}"
        if finding.column is not None:
            where += f":{finding.column}"
    return where


def finding_text(finding: Finding) -> str:
    """One finding as text: the place, the rule, its level, the key, the message; the fix below."""
    key = f"{finding.key}: " if finding.key else ""
    text = f"{location_text(finding)}: {finding.rule} [{finding.level}] {key}{finding.message}"
    if finding.fix:
        text += f"\n    fix: {finding.fix}" + (" (--fix rewrites it)" if finding.edits else "")
    return text


def summary(reports: Sequence[FileReport]) -> dict[str, int]:
    counts = {"files": len(reports), "conforms": 0, "violations": 0, "unreadable": 0}
    for report in reports:
        counts[report.outcome] += 1
    counts["findings"] = sum(len(report.violations) + len(report.warnings) for report in reports)
    counts["suppressed"] = sum(report.suppressed for report in reports)
    return counts


def text(reports: Sequence[FileReport]) -> str:
    """Every finding, then one line of counts."""
    lines = []
    for report in reports:
        if report.error:
            lines.append(f"{report.path}: cannot read: {report.error}")
        lines += [finding_text(f) for f in sorted(report.findings, key=_position)]
    counts = summary(reports)
    violations = sum(len(r.violations) for r in reports)
    warnings = sum(len(r.warnings) for r in reports)
    tail = (
        f"{counts['files']} file{'s' if counts['files'] != 1 else ''}: {violations} violation"
        f"{'s' if violations != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
    )
    if counts["unreadable"]:
        tail += f", {counts['unreadable']} unreadable"
    if counts["suppressed"]:
        tail += f" ({counts['suppressed']} silenced by csconform: ignore or [tool.csconform])"
    return "\n".join([*lines, tail])


def json_document(reports: Sequence[FileReport], command: str, **extra: Any) -> dict[str, Any]:
    """The JSON form: the command, every file, the summary, and the command's own top-level fields."""
    return {
        "tool": "csconform",
        "version": __version__,
        "command": command,
        **extra,
        "files": [report.as_dict() for report in reports],
        "summary": summary(reports),
    }


def json_text(document: dict[str, Any]) -> str:
    """Strict JSON (a non-finite number is written as null: JSON has no NaN or Infinity)."""
    return json.dumps(_finite(document), indent=2, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def sarif(reports: Sequence[FileReport], spec: Spec) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run: every rule that has a finding described, every finding a result,
    every unreadable file a tool notification."""
    findings = [f for report in reports for f in sorted(report.findings, key=_position)]
    rule_ids = sorted({f.rule for f in findings})
    index = {rule_id: number for number, rule_id in enumerate(rule_ids)}
    rules = []
    for rule_id in rule_ids:
        rule = spec.get(rule_id)
        described: dict[str, Any] = {
            "id": rule.id,
            "name": rule.id.replace("-", ""),
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.statement},
            "properties": {"level": rule.level, "area": rule.area, "source": rule.source_text},
        }
        if rule.fix:
            described["help"] = {"text": rule.fix}
        rules.append(described)
    results = [_sarif_result(f, index[f.rule]) for f in findings]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"cannot read: {report.error}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(report.path)}}}],
        }
        for report in reports
        if report.error
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not notifications}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "csconform",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def _sarif_result(finding: Finding, rule_index: int) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": {"uri": _uri(finding.path)}}
    if finding.line is not None:
        region: dict[str, Any] = {"startLine": finding.line}
        if finding.column is not None:
            region["startColumn"] = finding.column
        location["region"] = region
    message = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": "error" if finding.severity == "violation" else "warning",
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        "properties": {"level": finding.level, "severity": finding.severity},
    }
    if finding.key:
        result["locations"][0]["logicalLocations"] = [{"fullyQualifiedName": finding.key, "kind": "member"}]
    if finding.edits:
        result["fixes"] = [
            {
                "description": {"text": finding.fix or finding.message},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(finding.path)},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": edit.line,
                                    "startColumn": edit.column,
                                    "endLine": edit.end_line,
                                    "endColumn": edit.end_column,
                                },
                                "insertedContent": {"text": edit.text},
                            }
                            for edit in finding.edits
                        ],
                    }
                ],
            }
        ]
    return result


def _uri(path: str) -> str:
    """A relative path as a URI reference (SARIF's artifactLocation.uri): slashes kept, the rest quoted."""
    return quote(path.replace("\\", "/"), safe="/")


def github(reports: Sequence[FileReport]) -> str:
    """One workflow command per finding (``::error file=...,line=...,col=...,title=RULE::message``)."""
    lines = []
    for report in reports:
        if report.error:
            # worded as the text and SARIF forms word it, so the annotation says the file went unread
            message = _data(f"cannot read: {report.error}")
            lines.append(f"::error file={_property(report.path)},title=csconform::{message}")
        for finding in sorted(report.findings, key=_position):
            command = "error" if finding.severity == "violation" else "warning"
            properties = [f"file={_property(finding.path)}"]
            if finding.line is not None:
                properties.append(f"line={finding.line}")
                if finding.column is not None:
                    properties.append(f"col={finding.column}")
            properties.append(f"title={_property(f'{finding.rule} [{finding.level}]')}")
            message = finding.message + (f" Fix: {finding.fix}" if finding.fix else "")
            lines.append(f"::{command} {','.join(properties)}::{_data(message)}")
    return "\n".join(lines)


def _data(value: str) -> str:
    """A workflow command's message, escaped as the runner reads it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    """A workflow command's property value, escaped (its separators too)."""
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def _position(finding: Finding) -> tuple[int, int, str]:
    return (finding.line or 0, finding.column or 0, finding.rule)
