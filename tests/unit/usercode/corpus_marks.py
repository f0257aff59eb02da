"""The corpus of bad and near-miss training code, and the findings each file marks.

A line ending in ``# expect: CODE-012`` (several rules separated by commas) must draw exactly those
findings; every other line none. A file whose first line is ``# csconform-corpus: release=1.7.1`` is
judged for that release, the others for the newest.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
EXPECT = re.compile(r"#\s*expect:\s*(?P<rules>CODE-\d{3}(?:\s*,\s*CODE-\d{3})*)")
RELEASE = re.compile(r"#\s*csconform-corpus:\s*release=(?P<release>\S+)")


def corpus_files() -> list[Path]:
    return sorted(CORPUS.rglob("*.py"))


def release_of(path: Path) -> str | None:
    first = path.read_text(encoding="utf-8").splitlines()[:1]
    match = RELEASE.search(first[0]) if first else None
    return match["release"] if match else None


def marks(path: Path) -> Counter[tuple[int, str]]:
    """(line, rule) of every finding the file's comments expect."""
    expected: Counter[tuple[int, str]] = Counter()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            expected.update((number, rule.strip()) for rule in match["rules"].split(","))
    return expected
