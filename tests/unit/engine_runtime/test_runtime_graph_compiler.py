"""Unit tests of engine.graph, engine.system and engine.compiler."""

from __future__ import annotations

import numpy as np
import pytest

from csconform.engine import compiler, context, graph, nn
from csconform.engine.system import System
from csconform.errors import InvalidInputError, UnknownNameError


@pytest.fixture(autouse=True)
def fresh_engine():
    context.reset()
    yield
    context.reset()


def traced(*ops):
    x = np.zeros((2, 3), dtype=np.float32)

    def step():
        for name in ops:
            graph.record(name, x)

    return graph.trace(step)[0]


def test_record_outside_a_trace_is_a_noop_and_traces_nest():
    graph.record("linear", np.zeros(2))
    assert not graph.is_tracing()
    with graph.recording() as outer:
        graph.record("a", np.zeros(1))
        with graph.recording() as inner:
            graph.record("b", np.zeros(1))
        graph.record("c", np.zeros(1))
    assert [op.name for op in outer.ops] == ["a", "c"] and [op.name for op in inner.ops] == ["b"]


def test_first_difference_describes_the_change():
    a, b = traced("linear", "relu"), traced("linear")
    assert a.first_difference(a) is None
    assert "2 operations, now 1" in a.first_difference(b)
    assert "operation 1" in a.first_difference(traced("linear", "gelu"))


def test_module_hooks_are_removed_after_tracing():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with graph.module_calls_recorded(model):
        assert "forward" in vars(model.layers[0])
    assert all("forward" not in vars(layer) for layer in model.layers)
    step_graph, _ = graph.trace(lambda: model(np.ones((1, 3), dtype=np.float32)))
    assert step_graph.ops == ()  # nothing records outside module_calls_recorded


def test_system_arguments_are_checked():
    with pytest.raises(UnknownNameError, match="WSE-2"):
        System("cs-0", wafer="WSE-9")
    with pytest.raises(InvalidInputError, match="installation"):
        System("cs-0", installation="cloud")
    with pytest.raises(InvalidInputError, match="system_id"):
        System("")
    assert System(wafer="WSE-3").sram_bytes == 44 * 10**9


def test_compile_needs_a_target_system():
    with pytest.raises(InvalidInputError, match="system"):
        compiler.compile_graph(traced("linear"))
    with pytest.raises(InvalidInputError, match="compile_only"):
        compiler.compile_graph(traced("linear"), system_id="cs-0")


def test_perf_layers_from_traced_weights():
    model = nn.Sequential(nn.Embedding(50, 8), nn.LayerNorm(8), nn.Linear(8, 4, bias=False), nn.ReLU())
    with graph.module_calls_recorded(model):
        step_graph, _ = graph.trace(lambda: model(np.zeros((2, 5), dtype=np.int64)))
    layers = compiler.perf_layers(step_graph)
    assert [(layer.kind, layer.in_features, layer.out_features, layer.tokens, layer.bias) for layer in layers] == [
        ("embedding", 50, 8, 5, True),
        ("layer_norm", 8, 8, 5, True),
        ("dense", 8, 4, 5, False),
    ]
