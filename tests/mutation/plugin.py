"""A pytest plugin for mutation runs only: the same verdicts, sooner.

For every mutant, mutmut (``tox -e mutation``) runs the conformance tests that call the mutated
function and stops at the first failure (``-x``); only pass or fail matters. Two things make that
faster without changing any verdict:

* the selected tests run fastest first, by the durations mutmut's own stats run measured
  (``mutmut-stats.json`` in the ``mutants/`` directory where it runs pytest), so a failing test is
  reached sooner;
* Hypothesis does not shrink a failing example: the derandomized ``ci`` examples are generated as
  always, but the search for the smallest failing one (which can take many seconds) is skipped.

It also leaves out the tests of the published reports/ folder (which mutmut's copy of the project
does not hold): they check committed files, not the code being mutated.

Loaded through ``pytest_add_cli_args`` in ``[tool.mutmut]`` (pyproject.toml, tests/mutation/judge.toml),
never in a normal run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import Phase, settings

STATS_FILE = Path("mutmut-stats.json")
OF_THE_PUBLISHED_FOLDER = {"test_published_reports.py", "test_report_in_a_browser.py"}


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """After the csconform plugin loaded its profile (ci here): the same settings, without shrinking."""
    settings.register_profile("mutation", parent=settings(), phases=[p for p in Phase if p is not Phase.shrink])
    settings.load_profile("mutation")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    published = [item for item in items if item.path.name in OF_THE_PUBLISHED_FOLDER]
    if published:
        config.hook.pytest_deselected(items=published)
        items[:] = [item for item in items if item.path.name not in OF_THE_PUBLISHED_FOLDER]
    try:
        durations = json.loads(STATS_FILE.read_text(encoding="utf-8"))["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return  # the stats run itself, before any duration is known
    items.sort(key=lambda item: durations.get(item.nodeid, 0.0))
