"""Replay every case the adversarial campaign found (corpus/*.json), each a regression test.

A case names its class (what kind of mistake), what the command did before the fix, the exit
statuses it may end with and the phrase its refusal must contain; adversarial_cases.check_case
asserts the properties every command keeps (see that module).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from adversarial_cases import CLASSES, Case, check_case, corpus

CASES = corpus()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_corpus_case(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path)


def test_the_corpus_covers_every_class_and_says_what_each_case_found() -> None:
    kinds = Counter(case.kind for case in CASES)
    assert set(kinds) <= set(CLASSES)
    cli_classes = set(CLASSES) - {"restore", "non-finite", "api-types"}  # the engine API's own campaign
    assert cli_classes <= set(kinds), f"no corpus case of {sorted(cli_classes - set(kinds))}"
    assert all(case.found.strip() for case in CASES)
