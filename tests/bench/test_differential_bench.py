"""Speed of the differential fuzzer: examples per second per area, for each pair of implementations.

Each benchmark explores one area with one seed (programs drawn, run in lockstep, compared); the
examples per second go into the benchmark's ``extra_info``. The pair of the reference engine with
itself measures the harness; the engine against cerebras.pytorch runs where the package is installed
(``tox -e cstorch``'s environment) and is skipped elsewhere.
"""

from __future__ import annotations

import importlib.util

import pytest

from csconform.testing.differential.areas import AREA_NAMES
from csconform.testing.differential.explore import Pair, explore, implementations

EXAMPLES = 40
AGAINST = ("csconform.engine", "csconform.adapters.cstorch")


@pytest.mark.parametrize("against", AGAINST)
@pytest.mark.parametrize("area", AREA_NAMES)
def test_examples_per_second(benchmark, area: str, against: str) -> None:
    if against.endswith("cstorch") and importlib.util.find_spec("cerebras") is None:
        pytest.skip("cerebras-pytorch is not installed here (tox -e cstorch has it)")
    pair = Pair("csconform.engine", against)
    implementations(pair)  # imports outside the timing
    exploration = benchmark.pedantic(explore, args=(area, pair, 0, EXAMPLES), rounds=3, iterations=1)
    assert exploration.examples == EXAMPLES
    benchmark.extra_info["examples_per_s"] = round(EXAMPLES / benchmark.stats["mean"], 1)
