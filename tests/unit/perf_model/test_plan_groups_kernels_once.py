"""A plan groups its model's layers into kernels once and hands the kernels on.

Every execution model a plan asks (its mode's, the other mode for comparison, the memory check that
chooses the mode or adds a note) reads the same kernels; nothing caches the grouping, so a second
call would show here. Every module that holds ``group_kernels`` gets a counting wrapper.
"""

from __future__ import annotations

import sys

import pytest

from csconform.perf.execution.streaming import scaling_efficiency, strong_scaling_efficiency
from csconform.perf.models import kernels
from csconform.perf.models.zoo import get_model
from csconform.perf.plan import plan


@pytest.fixture
def groupings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many layers each call of ``group_kernels`` grouped, in call order, from any module."""
    calls: list[int] = []
    original = kernels.group_kernels

    def counting(layers, *args, **kwargs):
        calls.append(len(layers))
        return original(layers, *args, **kwargs)

    for module in list(sys.modules.values()):
        if (
            module is not None
            and module.__name__.startswith("csconform.")
            and getattr(module, "group_kernels", None) is original
        ):
            monkeypatch.setattr(module, "group_kernels", counting)
    return calls


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("gpt2_small", {"wafer": "wse2"}),  # weight streaming, with the note that the model would fit pipelined
        ("bert_base", {"wafer": "wse1"}),  # the mode chosen by the memory check: pipelined
        ("fc_mnist", {"wafer": "wse2", "mode": "pipelined"}),  # pipelined, compared with weight streaming
        ("gpt3_xl", {"wafer": "wse2", "systems": 4}),  # a cluster
    ],
)
def test_a_plan_groups_the_kernels_once(groupings: list[int], model: str, options: dict) -> None:
    layers = len(get_model(model).layers)
    planned = plan(model, **options)
    assert groupings == [layers], f"{planned.mode} plan of {model} grouped {len(groupings)} times"


def test_scaling_efficiencies_group_once_for_both_cluster_sizes(groupings: list[int]) -> None:
    layers = get_model("gpt3_xl").layers
    scaling_efficiency(layers, "wse2", 4, 64)
    strong_scaling_efficiency(layers, "wse2", 4, 256)
    assert groupings == [len(layers), len(layers)]
