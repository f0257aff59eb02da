"""Triage files (csconform/adapters/triage.py): which verdicts are expected failures, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from csconform.adapters.triage import load_triage
from csconform.errors import InstanceFormatError

ENTRY = """
  - ids: [{ids}]
    verdict: {verdict}
    finding: what it does
    evidence: file.py:1
    resolution: what was done
"""


def _write(tmp_path: Path, *entries: tuple[str, str]) -> Path:
    head = "implementation: demo 1.0\npackage: demo\nversion: '1.0'\nentries:"
    text = head + "".join(ENTRY.format(ids=i, verdict=v) for i, v in entries)
    path = tmp_path / "triage.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_departures_and_reference_choices_are_the_expected_failures(tmp_path):
    path = _write(
        tmp_path,
        ("A-001", "departs-from-docs"),
        ("B-001, B-002", "reference-choice"),
        ("C-001", "spec-claims-too-much"),
        ("D-001", "not-observable"),
    )
    assert load_triage(path).expected_failures() == ["A-001", "B-001", "B-002"]


def test_an_unknown_verdict_is_refused(tmp_path):
    with pytest.raises(InstanceFormatError, match="reference-choice"):
        load_triage(_write(tmp_path, ("A-001", "meh")))


def test_the_release_is_part_of_the_triage(tmp_path):
    triage = load_triage(_write(tmp_path, ("A-001", "departs-from-docs")))
    assert (triage.package, triage.version) == ("demo", "1.0")
