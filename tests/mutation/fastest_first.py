"""A pytest plugin for mutation runs only: run the selected tests fastest first.

For every mutant, mutmut (``tox -e mutation``) runs the conformance tests that call the mutated
function and stops at the first failure (``-x``). mutmut's own stats run measured each test's
duration (``mutmut-stats.json``, in the ``mutants/`` directory where it runs pytest), so ordering the
tests by that duration reaches a failing test sooner. The set of tests, and so every verdict, is
unchanged. Loaded through ``pytest_add_cli_args`` in ``[tool.mutmut]``, never in a normal test run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STATS_FILE = Path("mutmut-stats.json")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    try:
        durations = json.loads(STATS_FILE.read_text(encoding="utf-8"))["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return  # the stats run itself, before any duration is known
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
