"""Documented execution-mode and throughput claims checked against the performance model
(specs/performance.yaml).  csconform.perf is the harness's model, so it is imported directly."""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.cli import main as cli_main
from csconform.errors import CapacityError, InvalidInputError, UnknownNameError
from csconform.perf.costs import Layer, group_kernels
from csconform.perf.hardware import SWARMX, get_wafer
from csconform.perf.pipeline import (
    fits_pipelined,
    inflight_samples,
    kernel_memory_bytes,
    steady_state_step,
    timeline,
)
from csconform.perf.plan import plan
from csconform.perf.streaming import scaling_efficiency, weight_streaming
from csconform.perf.zoo import ZOO_NAMES, get_model

# These checks exercise csconform's own performance model, not the implementation under test.
pytestmark = pytest.mark.capability("performance")

SMALL = ["fc_mnist", "resnet50", "bert_base", "bert_large", "gpt2_small", "gpt2_medium"]
LARGE = ["gpt3_6.7b", "gpt3_13b", "gpt3_175b"]


@functools.cache
def cached_plan(model: str, wafer: str = "wse2", mode: str | None = None, systems: int = 1):
    return plan(model, wafer, mode=mode, systems=systems)


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.mark.spec("PERF-001")
@pytest.mark.parametrize("name", SMALL)
def test_models_below_a_billion_run_pipelined(name):
    model = get_model(name)
    assert model.params < 1e9
    assert fits_pipelined(model.layers, "wse2")
    assert cached_plan(name).mode == "pipelined"


@pytest.mark.spec("PERF-002")
@pytest.mark.parametrize("name", LARGE)
def test_large_models_do_not_fit_pipelined(name):
    model = get_model(name)
    assert not fits_pipelined(model.layers, "wse2")
    assert cached_plan(name).mode == "weight_streaming"
    with pytest.raises(CapacityError, match="use weight streaming"):
        plan(name, "wse2", mode="pipelined")


@pytest.mark.spec("PERF-003")
@pytest.mark.parametrize("name", ZOO_NAMES)
def test_weight_streaming_runs_every_model(name):
    model = get_model(name)
    result = weight_streaming(model.layers, "wse2", systems=1, batch_per_system=4)
    wafer = get_wafer("wse2")
    assert result.samples_per_s > 0
    assert result.wafer_memory_bytes <= wafer.fabric_memory_bytes
    if name == "gpt3_175b":
        assert model.params * 2 > wafer.on_chip_memory_bytes  # 16-bit weights alone exceed the SRAM


@pytest.mark.spec("PERF-004")
def test_streamed_layer_time_is_slower_of_compute_and_io():
    layers = get_model("gpt3_xl").layers
    one = weight_streaming(layers, "wse2", 1, 1)
    many = weight_streaming(layers, "wse2", 1, 64)
    for layer in one.layers + many.layers:
        assert layer.forward_s == max(layer.forward_compute_s, layer.weights_in_s)
        assert layer.backward_s == max(layer.backward_compute_s, layer.weights_in_s, layer.gradients_out_s)
    blocks = [x for x in one.layers if x.name.startswith("block")]
    assert all(x.bound == "io" for x in blocks)
    assert all(x.bound == "compute" for x in many.layers if x.name.startswith("block"))
    rates = [weight_streaming(layers, "wse2", 1, b).samples_per_s for b in (1, 2, 4, 8, 16, 32, 64)]
    assert all(b >= a * (1 - 1e-9) for a, b in zip(rates, rates[1:], strict=False))


@pytest.mark.spec("PERF-005")
def test_data_parallel_shards():
    p = plan("gpt3_xl", "wse2", systems=8, batch=64)
    assert p.mode == "weight_streaming"
    assert p.result.batch_per_system == 8 and p.result.global_batch == 64 == p.batch
    with pytest.raises(InvalidInputError, match="split evenly"):
        plan("gpt3_xl", "wse2", systems=8, batch=60)


@pytest.mark.spec("PERF-006")
def test_near_linear_scaling_to_192():
    layers = get_model("gpt3_xl").layers
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 192]
    rates = [weight_streaming(layers, "wse2", n, 8).samples_per_s for n in sizes]
    assert all(b > a for a, b in zip(rates, rates[1:], strict=False))
    for n, rate in zip(sizes, rates, strict=False):
        assert rate / (n * rates[0]) >= 0.9
    assert scaling_efficiency(layers, "wse2", 192, 8) >= 0.9
    assert 192 * 8 == 1536


@pytest.mark.spec("PERF-007")
@settings(max_examples=15)
@given(st.integers(min_value=1, max_value=192))
def test_cluster_size_needs_no_model_change(systems):
    model = get_model("gpt2_xl")
    p = plan(model, "wse2", systems=systems, batch=2 * systems)
    assert p.params == model.params
    assert p.flops_per_sample == plan(model, "wse2", mode="weight_streaming", batch=2).flops_per_sample
    assert p.systems == systems


@pytest.mark.spec("PERF-008")
def test_optimizer_location():
    layers = get_model("bert_base").layers
    streamed = [weight_streaming(layers, "wse2", 1, b).hardware_flops_per_sample for b in (1, 8, 64)]
    assert streamed[0] == streamed[1] == streamed[2]
    small = plan("bert_base", "wse2", batch=8).flops_per_sample
    large = plan("bert_base", "wse2", batch=512).flops_per_sample
    assert small > large


@pytest.mark.spec("PERF-009")
def test_swarmx_io_independent_of_cluster_size():
    layers = get_model("gpt3_xl").layers
    one = weight_streaming(layers, "wse2", 1, 8)
    big = weight_streaming(layers, "wse2", 192, 8)
    for a, b in zip(one.layers, big.layers, strict=False):
        assert (a.weights_in_s, a.gradients_out_s) == (b.weights_in_s, b.gradients_out_s)
    assert big.step_s - one.step_s == pytest.approx(3 * SWARMX.latency_s(192))


@pytest.mark.spec("PERF-010")
@pytest.mark.parametrize("name", ["fc_mnist", "resnet50", "gpt2_small"])
def test_each_kernel_has_its_own_rectangle(name):
    p = cached_plan(name)
    kernels = p.kernels
    assert [k["name"] for k in kernels] == [k.name for k in group_kernels(get_model(name).layers)]
    for k in kernels:
        assert k["width"] >= 1 and k["height"] >= 1
        assert k["x"] >= 0 and k["x"] + k["width"] <= p.fabric["width"]
        assert k["y"] >= 0 and k["y"] + k["height"] <= p.fabric["height"]
    for i, a in enumerate(kernels):
        for b in kernels[i + 1 :]:
            assert not overlaps(a, b), (a["name"], b["name"])


@pytest.mark.spec("PERF-011")
@pytest.mark.parametrize("name", ["resnet50", "bert_base"])
def test_region_sizes_maximise_throughput(name):
    p = cached_plan(name)
    assert p.samples_per_s >= 0.95 * p.bound_samples_per_s
    wafer = get_wafer("wse2")
    equal_share = wafer.fabric_cores / len(p.kernels)
    slowest_equal = max(k.compute_cycles_per_sample * k.rect.cores / equal_share for k in p.result.kernels)
    assert p.samples_per_s > wafer.clock_hz / slowest_equal


@pytest.mark.spec("PERF-012")
def test_fill_then_steady_state():
    assert steady_state_step(3) == 3
    assert steady_state_step(len(cached_plan("fc_mnist").kernels)) == 3
    for k in (1, 2, 5, 18):
        assert steady_state_step(k) == k
        grid = timeline(k, k + 4)
        busy = (grid >= 0).any(axis=2)
        assert busy[:, k - 1 :].all()
        if k > 1:
            assert not busy[:, k - 2].all()
    result = cached_plan("resnet50").result
    assert result.fill_latency_s > 1 / result.samples_per_s
    assert result.fill_latency_s == pytest.approx(
        sum(k.cycles_per_sample for k in result.kernels) / result.wafer.clock_hz
    )


@pytest.mark.spec("PERF-013")
@pytest.mark.parametrize("name", ["resnet50", "gpt2_medium"])
def test_weights_stay_in_their_region(name):
    result = cached_plan(name).result
    per_core = result.wafer.memory_per_core_bytes
    for kernel in result.kernels:
        assert kernel.memory_bytes <= kernel.rect.cores * per_core


@pytest.mark.spec("PERF-014")
@pytest.mark.parametrize("name", ZOO_NAMES)
def test_throughput_below_bound_and_peak(name):
    p = cached_plan(name)
    peak = p.systems * get_wafer(p.wafer).peak_flops_per_s / p.flops_per_sample
    assert 0 < p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9)
    assert p.bound_samples_per_s <= peak * (1 + 1e-9)


@pytest.mark.spec("PERF-014")
@pytest.mark.parametrize("wafer", ["wse1", "wse3"])
def test_throughput_below_peak_other_wafers(wafer):
    for name in ("bert_base", "gpt3_xl"):
        p = plan(name, wafer)
        peak = get_wafer(wafer).peak_flops_per_s / p.flops_per_sample
        assert p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9) <= peak * (1 + 1e-6)


@pytest.mark.spec("PERF-015")
def test_rate_of_the_slowest_kernel():
    p = cached_plan("bert_large")
    slowest = max(k.cycles_per_sample for k in p.result.kernels)
    assert p.samples_per_s == pytest.approx(get_wafer("wse2").clock_hz / slowest)
    rates = [k["samples_per_s"] for k in p.kernels]
    assert min(rates) == pytest.approx(p.samples_per_s)
    assert all(r >= p.samples_per_s * (1 - 1e-9) for r in rates)


@pytest.mark.spec("PERF-015")
def test_input_stream_caps_a_tiny_model():
    p = cached_plan("fc_mnist")
    wafer = get_wafer("wse2")
    input_limit = wafer.system_io_bytes_per_s / (784 * 2)
    assert p.samples_per_s == pytest.approx(input_limit)
    assert p.result.wafer_samples_per_s > input_limit
    assert p.bound_samples_per_s == pytest.approx(input_limit)


@pytest.mark.spec("PERF-016")
@pytest.mark.parametrize("name", ["gpt2_small", "gpt2_xl", "gpt3_xl", "gpt3_13b", "gpt3_175b"])
def test_six_n_flops_per_token(name):
    model = get_model(name)
    blocks = [x for x in model.layers if x.group.startswith("block")]
    d = blocks[0].in_features
    n_layers = len({x.group for x in blocks})
    head = next(x for x in model.layers if x.name == "lm_head")
    final_ln = next(x for x in model.layers if x.name == "ln_f")
    non_embedding = sum(x.params for x in blocks) + final_ln.params
    t = model.seq_len
    per_token = model.flops_per_sample / t
    expected = 6 * (non_embedding + head.in_features * head.out_features) + 12 * n_layers * t * d
    # layer norms cost a few FLOPs per element that the 6N rule ignores
    assert per_token == pytest.approx(expected, rel=2e-3)
    if name == "gpt3_175b":
        assert per_token == pytest.approx(6 * model.params, rel=0.03)


@pytest.mark.spec("PERF-017")
@given(st.integers(min_value=1, max_value=60))
def test_inflight_samples(kernel_count):
    counts = inflight_samples(kernel_count)
    assert counts[-1] == 1 and counts[0] == 2 * (kernel_count - 1) + 1
    grid = timeline(kernel_count, 4 * kernel_count + 2)
    for k in range(kernel_count):
        forward_step = int(next(t for t in range(grid.shape[1]) if grid[k, t, 0] == 0))
        backward_step = int(next(t for t in range(grid.shape[1]) if grid[k, t, 1] == 0))
        assert backward_step - forward_step == counts[k]


@pytest.mark.spec("PERF-017")
def test_memory_charges_inflight_activations():
    layers = [Layer("dense", 256, 256, 8, name=f"fc{i}") for i in range(4)]
    kernels = group_kernels(layers)
    memory = kernel_memory_bytes(kernels)
    for kernel, n, m in zip(kernels, inflight_samples(4), memory, strict=False):
        assert m == kernel.weight_bytes + kernel.optimizer_state_bytes + n * kernel.activation_bytes_per_sample
    assert memory[0] > memory[-1]


@pytest.mark.spec("PERF-018")
def test_pipelined_is_single_system():
    with pytest.raises(InvalidInputError, match="one system"):
        plan("bert_base", "wse2", mode="pipelined", systems=2)
    assert plan("bert_base", "wse2", systems=2, batch=256).mode == "weight_streaming"


@pytest.mark.spec("PERF-019")
def test_unknown_model(capsys, tmp_path):
    with pytest.raises(UnknownNameError) as info:
        plan("gpt5", "wse2")
    for known in ZOO_NAMES:
        assert known in str(info.value)
    status = cli_main(["plan", "--model", "gpt5", "--json", str(tmp_path / "p.json")])
    captured = capsys.readouterr()
    assert status == 2
    assert "gpt3_175b" in captured.err and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1


@pytest.mark.spec("PERF-020")
@pytest.mark.parametrize("name", ZOO_NAMES)
def test_published_parameter_counts(name):
    model = get_model(name)
    assert math.isclose(model.params, model.published_params, rel_tol=0.03)
    if name == "fc_mnist":
        assert model.params == 784 * 500 + 500 + 500 * 500 + 500 + 500 * 10 + 10


@pytest.mark.spec("PERF-021")
def test_storage_and_compute_scale_independently():
    one = plan("gpt3_13b", "wse2", systems=1, batch=8)
    many = plan("gpt3_13b", "wse2", systems=64, batch=64 * 8)
    assert one.breakdown["memory"]["memoryx_bytes"] == many.breakdown["memory"]["memoryx_bytes"]
    assert one.breakdown["memory"]["memoryx_bytes"] == pytest.approx(20 * one.params)
    assert one.breakdown["memory"]["wafer_bytes"] == many.breakdown["memory"]["wafer_bytes"]
    assert many.samples_per_s > 60 * one.samples_per_s
    # two models with the same largest layer and activations but twice the layers need the same wafer memory
    block = [Layer("dense", 512, 512, 4, name=f"fc{i}") for i in range(8)]
    short = weight_streaming(block[:4], "wse2", 1, 1)
    long = weight_streaming(block, "wse2", 1, 1)
    assert long.params == 2 * short.params
    checkpoints = 4 * block[0].input_bytes
    assert long.wafer_memory_bytes - short.wafer_memory_bytes == pytest.approx(checkpoints)


@pytest.mark.spec("PERF-014", "PERF-010")
@settings(max_examples=10)
@given(
    widths=st.lists(st.integers(min_value=8, max_value=4096), min_size=2, max_size=7),
    tokens=st.integers(min_value=1, max_value=512),
    batch=st.integers(min_value=1, max_value=1024),
    wafer=st.sampled_from(["wse1", "wse2", "wse3"]),
)
def test_random_mlps_respect_bound_and_peak(widths, tokens, batch, wafer):
    layers = [
        Layer("dense", a, b, tokens, name=f"fc{i}") for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))
    ]
    p = plan(layers, wafer, batch=batch)
    w = get_wafer(wafer)
    assert p.mode == "pipelined"
    assert 0 < p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9)
    assert p.bound_samples_per_s <= w.peak_flops_per_s / p.flops_per_sample * (1 + 1e-6)
    for i, a in enumerate(p.kernels):
        assert a["x"] + a["width"] <= w.fabric_width and a["y"] + a["height"] <= w.fabric_height
        for b in p.kernels[i + 1 :]:
            assert not overlaps(a, b)
