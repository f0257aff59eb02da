"""Cost of planning: `plan()` for a pipelined model (placement included) and a weight-streaming one.

The brief keeps `plan` under about 10 s for every zoo model; these benchmarks track the slowest
kinds of call: a 26-kernel pipelined placement and the 98-layer GPT-3 175B stream on a cluster.
"""

from __future__ import annotations

import pytest

from csconform.perf.plan import plan


@pytest.mark.parametrize(
    ("model", "systems", "mode"),
    [("bert_large", 1, "pipelined"), ("gpt2_medium", 1, "pipelined"), ("gpt3_175b", 192, None)],
)
def test_plan(benchmark, model, systems, mode):
    kwargs = {"systems": systems, "mode": mode}
    result = benchmark.pedantic(plan, args=(model, "wse2"), kwargs=kwargs, rounds=3, iterations=1)
    assert result.samples_per_s > 0
    assert result.samples_per_s <= result.bound_samples_per_s * (1 + 1e-9)
