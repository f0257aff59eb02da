"""The random half of the adversarial campaign: Hypothesis draws cases for every subcommand.

Each command's strategy (adversarial_strategies) mutates valid inputs and command lines; every
drawn case must keep the properties of adversarial_cases. The number of cases per command is
sized for the default run (derandomized under the ``ci`` profile: the same cases every run, about
a minute on two cores); ``HYPOTHESIS_PROFILE=nightly`` draws twenty times as many, at random.
A failure prints the case; add it to corpus/ (a JSON file) once fixed, so it is replayed for good.
"""

from __future__ import annotations

import os

import pytest
from adversarial_cases import Case, check_case
from adversarial_strategies import COMMANDS
from hypothesis import HealthCheck, given, settings

# cases per command in the default run: the expensive commands (check starts pytest, calibrate fits
# and cross-validates, place solves) get fewer
EXAMPLES = {
    "plan": 14,
    "place": 8,
    "sweep": 8,
    "calibrate": 6,
    "report": 8,
    "check": 4,
    "interface": 10,
    "spec": 10,
    "validate": 8,
    "lint": 8,
    "diff": 8,
}
SCALE = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "nightly" else 1


@pytest.mark.parametrize("command", list(COMMANDS))
def test_random_cases(command: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    @settings(
        max_examples=EXAMPLES[command] * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(case=COMMANDS[command]())
    def run(case: Case) -> None:
        check_case(case, tmp_path_factory.mktemp(command))

    run()
