"""A pytest plugin for the meta-tests: append every test case Hypothesis generates to a file.

Loaded with ``-p tests.meta.plugins.record_examples`` and ``CSCONFORM_RECORD_EXAMPLES=PATH``. Each
line is a JSON object: the pytest node id of the test that drew it, Hypothesis' representation of
the test case (the arguments, or a state machine's steps) and its status. It listens through
Hypothesis' observability callbacks, which see every test case, including the shrinker's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis.internal import observability

RECORD_VARIABLE = "CSCONFORM_RECORD_EXAMPLES"

_current_test = ""


def pytest_configure(config: pytest.Config) -> None:
    target = os.environ.get(RECORD_VARIABLE)
    if not target:
        return
    path = Path(target)
    observability.OBSERVABILITY_COLLECT_COVERAGE = False  # coverage tracing would only slow the run

    def record(observation: observability.Observation) -> None:
        if observation.type != "test_case":
            return
        line = {
            "test": _current_test,
            "representation": observation.representation,
            "status": observation.status,
        }
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")

    observability.add_observability_callback(record)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _current_test
    _current_test = item.nodeid
