"""Documented execution-mode and throughput claims checked against the performance model
(specs/performance.yaml).  csconform.perf is the harness's model, so it is imported directly."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from importlib import resources

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.cli import main as cli_main
from csconform.errors import (
    CapacityError,
    CsConformError,
    InvalidInputError,
    ModelConfigError,
    UnknownNameError,
    UnreadableDocumentError,
    UnsupportedModelError,
)
from csconform.perf.calibration.fit import error, fitted_runs, worst
from csconform.perf.calibration.measured_runs import measured_csv, read_measured, runs
from csconform.perf.execution.efficiency import IDEAL, PARAMETERS, calibration_record, effective_flops, fitted
from csconform.perf.execution.pipelined import (
    fits_pipelined,
    inflight_samples,
    kernel_memory_bytes,
    steady_state_step,
    timeline,
)
from csconform.perf.execution.streaming import scaling_efficiency, weight_streaming
from csconform.perf.hardware import SWARMX, get_wafer
from csconform.perf.models.hf_config import load_model_config, model_from_config
from csconform.perf.models.kernels import group_kernels
from csconform.perf.models.layer import Layer
from csconform.perf.models.zoo import ZOO_NAMES, get_model
from csconform.perf.models.zoo_section import model_from_zoo_section
from csconform.perf.plan import plan
from csconform.testing.model_configs import model_configs

# These checks exercise csconform's own performance model, not the implementation under test.
pytestmark = pytest.mark.capability("performance")

SMALL = ["fc_mnist", "resnet50", "bert_base", "bert_large", "gpt2_small", "gpt2_medium"]
LARGE = ["gpt3_6.7b", "gpt3_13b", "gpt3_175b"]


@functools.cache
def cached_plan(model: str, wafer: str = "wse2", mode: str | None = None, systems: int = 1):
    return plan(model, wafer, mode=mode, systems=systems)


def pipelined_plan(model: str):
    return cached_plan(model, mode="pipelined")


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.mark.spec("PERF-030")
@pytest.mark.parametrize("name", SMALL)
def test_models_below_a_billion_fit_pipelined(name):
    model = get_model(name)
    assert model.params < 1e9
    assert fits_pipelined(model.layers, "wse2")
    assert cached_plan(name, mode="pipelined").mode == "pipelined"


@pytest.mark.spec("PERF-031")
@pytest.mark.parametrize("name", ["bert_large", "gpt2_small"])
def test_without_a_mode_plan_streams_weights_except_on_wse1(name, tmp_path):
    for wafer in ("wse2", "wse3"):
        p = plan(name, wafer, batch=64)
        assert p.mode == "weight_streaming"
        assert any("pipelined" in note for note in p.notes)
    assert all("pipelined" not in note for note in plan("gpt3_13b", "wse2", batch=64).notes)
    assert plan(name, "wse1", batch=64).mode == "pipelined"
    out = tmp_path / "plan.json"
    assert cli_main(["plan", "--model", name, "--batch", "64", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["mode"] == "weight_streaming"


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


@pytest.mark.spec("PERF-022")
def test_streamed_layer_time_is_slower_of_compute_and_io_plus_latency():
    layers = get_model("gpt3_xl").layers
    kernels = group_kernels(layers)
    cal = fitted()
    peak = get_wafer("wse2").peak_flops_per_s
    one = weight_streaming(layers, "wse2", 1, 1)
    many = weight_streaming(layers, "wse2", 1, 64)
    for result in (one, many):
        for layer, kernel in zip(result.layers, kernels, strict=True):
            forward, backward = effective_flops(kernel, cal)
            assert layer.forward_compute_s == pytest.approx(result.batch_per_system * forward / peak)
            assert layer.backward_compute_s == pytest.approx(result.batch_per_system * (forward + backward) / peak)
            assert layer.latency_s == kernel.weight_layers * cal.layer_latency_s
            assert layer.forward_s == max(layer.forward_compute_s, layer.weights_in_s) + layer.latency_s
            assert layer.backward_s == (
                max(layer.backward_compute_s, layer.weights_in_s, layer.gradients_out_s) + layer.latency_s
            )
        assert result.step_s == pytest.approx(sum(x.forward_s + x.backward_s for x in result.layers))
    blocks = [x for x in one.layers if x.name.startswith("block")]
    assert all(x.bound in ("latency", "io") for x in blocks)
    assert all(x.bound == "compute" for x in many.layers if x.name.startswith("block"))
    # the attention core runs at its own, lower efficiency: a longer sequence costs more than its FLOPs
    short, long = (weight_streaming(get_model("gpt3_xl", seq_len=t).layers, "wse2", 1, 64) for t in (512, 2048))
    assert long.compute_s / short.compute_s > long.hardware_flops_per_sample / short.hardware_flops_per_sample


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
    small = plan("bert_base", "wse2", mode="pipelined", batch=8).flops_per_sample
    large = plan("bert_base", "wse2", mode="pipelined", batch=512).flops_per_sample
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
    p = pipelined_plan(name)
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
    p = pipelined_plan(name)
    steady = p.result.wafer_samples_per_s  # the placement sets the steady state; the bound is its relaxation
    assert steady >= 0.95 * p.bound_samples_per_s
    wafer = get_wafer("wse2")
    equal_share = wafer.fabric_cores / len(p.kernels)
    slowest_equal = max(k.compute_cycles_per_sample * k.rect.cores / equal_share for k in p.result.kernels)
    assert steady > wafer.clock_hz / slowest_equal


@pytest.mark.spec("PERF-012")
def test_fill_then_steady_state():
    assert steady_state_step(3) == 3
    assert steady_state_step(len(pipelined_plan("fc_mnist").kernels)) == 3
    for k in (1, 2, 5, 18):
        assert steady_state_step(k) == k
        grid = timeline(k, k + 4)
        busy = (grid >= 0).any(axis=2)
        assert busy[:, k - 1 :].all()
        if k > 1:
            assert not busy[:, k - 2].all()
    result = pipelined_plan("resnet50").result
    assert result.fill_latency_s > 1 / result.samples_per_s
    assert result.fill_latency_s == pytest.approx(
        sum(k.cycles_per_sample for k in result.kernels) / result.wafer.clock_hz
    )


@pytest.mark.spec("PERF-013")
@pytest.mark.parametrize("name", ["resnet50", "gpt2_medium"])
def test_weights_stay_in_their_region(name):
    result = pipelined_plan(name).result
    per_core = result.wafer.memory_per_core_bytes
    for kernel in result.kernels:
        assert kernel.memory_bytes <= kernel.rect.cores * per_core


@pytest.mark.spec("PERF-014")
@pytest.mark.parametrize("name", ZOO_NAMES)
def test_throughput_below_bound_and_peak(name):
    for p in [cached_plan(name)] + ([pipelined_plan(name)] if name in SMALL else []):
        peak = p.systems * get_wafer(p.wafer).peak_flops_per_s / p.flops_per_sample
        assert 0 < p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9)
        assert p.bound_samples_per_s <= peak * (1 + 1e-9)


@pytest.mark.spec("PERF-014")
@pytest.mark.parametrize("wafer", ["wse1", "wse3"])
def test_throughput_below_peak_other_wafers(wafer):
    for name, mode in (("bert_base", "pipelined"), ("bert_base", "weight_streaming"), ("gpt3_xl", None)):
        p = plan(name, wafer, mode=mode)
        peak = get_wafer(wafer).peak_flops_per_s / p.flops_per_sample
        assert p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9) <= peak * (1 + 1e-6)


@pytest.mark.spec("PERF-023")
def test_each_batch_fills_and_drains_the_pipeline():
    p = pipelined_plan("bert_large")
    result = p.result
    clock = get_wafer("wse2").clock_hz
    slowest = max(k.cycles_per_sample for k in result.kernels)
    fill = sum(k.cycles_per_sample for k in result.kernels) / clock
    assert result.batch_s == pytest.approx(fill + (p.batch - 1) * slowest / clock)
    assert p.samples_per_s == pytest.approx(min(p.batch / result.batch_s, result.input_samples_per_s))
    assert result.wafer_samples_per_s == pytest.approx(clock / slowest)
    rates = [k["samples_per_s"] for k in p.kernels]
    assert min(rates) == pytest.approx(result.wafer_samples_per_s)
    assert all(r >= result.wafer_samples_per_s * (1 - 1e-9) for r in rates)
    # the same placement at growing batches: the batch rate rises toward the steady state
    batch_rates = [dataclasses.replace(result, batch=b).samples_per_s for b in (1, 4, 32, 256, 4096, 1 << 20)]
    assert batch_rates[0] == pytest.approx(
        min(clock / sum(k.cycles_per_sample for k in result.kernels), result.input_samples_per_s)
    )
    assert all(b > a for a, b in zip(batch_rates, batch_rates[1:], strict=False))
    assert batch_rates[-1] <= result.wafer_samples_per_s
    assert batch_rates[-1] == pytest.approx(min(result.wafer_samples_per_s, result.input_samples_per_s), rel=1e-3)


@pytest.mark.spec("PERF-023")
def test_input_stream_caps_a_tiny_model():
    p = pipelined_plan("fc_mnist")
    wafer = get_wafer("wse2")
    input_limit = wafer.system_io_bytes_per_s / (784 * 2)
    assert p.samples_per_s == pytest.approx(input_limit)
    assert p.batch / p.result.batch_s > input_limit
    assert p.bound_samples_per_s == pytest.approx(input_limit)


@pytest.mark.spec("PERF-023")
def test_input_workers_cap_a_token_model():
    result = pipelined_plan("bert_base").result
    tokens = 128
    assert result.worker_samples_per_s == pytest.approx(fitted().input_tokens_per_s / tokens)
    assert result.input_samples_per_s <= result.worker_samples_per_s
    assert pipelined_plan("bert_base").samples_per_s <= result.worker_samples_per_s * (1 + 1e-12)


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
    p = plan(layers, wafer, mode="pipelined", batch=batch)
    w = get_wafer(wafer)
    assert 0 < p.samples_per_s <= p.bound_samples_per_s * (1 + 1e-9)
    assert p.bound_samples_per_s <= w.peak_flops_per_s / p.flops_per_sample * (1 + 1e-6)
    for i, a in enumerate(p.kernels):
        assert a["x"] + a["width"] <= w.fabric_width and a["y"] + a["height"] <= w.fabric_height
        for b in p.kernels[i + 1 :]:
            assert not overlaps(a, b)


# --- models from their configs (PERF-024, PERF-025) ---------------------------------------------------

HF_CONFIGS = {
    # name: (config as in the Hugging Face hub, published parameter count, relative tolerance)
    "gpt2": (
        {
            "model_type": "gpt2",
            "n_layer": 12,
            "n_embd": 768,
            "n_head": 12,
            "n_inner": None,
            "n_positions": 1024,
            "n_ctx": 1024,
            "vocab_size": 50257,
            "activation_function": "gelu_new",
        },
        124_439_808,
        0.0,
    ),
    "gpt-j-6b": (
        {
            "model_type": "gptj",
            "n_layer": 28,
            "n_embd": 4096,
            "n_head": 16,
            "rotary_dim": 64,
            "n_positions": 2048,
            "vocab_size": 50400,
            "activation_function": "gelu_new",
            "tie_word_embeddings": False,
        },
        6_053_381_344,
        1e-3,
    ),
    "gpt-neox-20b": (
        {
            "model_type": "gpt_neox",
            "num_hidden_layers": 44,
            "hidden_size": 6144,
            "num_attention_heads": 64,
            "intermediate_size": 24576,
            "max_position_embeddings": 2048,
            "vocab_size": 50432,
            "hidden_act": "gelu",
            "rotary_pct": 0.25,
            "tie_word_embeddings": False,
        },
        20_554_567_680,
        0.0,
    ),
    "llama-2-70b": (
        {
            "model_type": "llama",
            "num_hidden_layers": 80,
            "hidden_size": 8192,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "intermediate_size": 28672,
            "max_position_embeddings": 4096,
            "vocab_size": 32000,
            "hidden_act": "silu",
            "tie_word_embeddings": False,
        },
        68_976_648_192,
        0.0,
    ),
    "bert-base-uncased": (
        {
            "model_type": "bert",
            "architectures": ["BertForPreTraining"],
            "num_hidden_layers": 12,
            "hidden_size": 768,
            "num_attention_heads": 12,
            "intermediate_size": 3072,
            "max_position_embeddings": 512,
            "vocab_size": 30522,
            "type_vocab_size": 2,
            "hidden_act": "gelu",
        },
        110_106_428,
        0.0,
    ),
}


@pytest.mark.spec("PERF-024")
@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_plans_a_model_from_its_config(name, tmp_path):
    config, published, tolerance = HF_CONFIGS[name]
    model = model_from_config(config, seq_len=128, name=name)
    assert model.params == pytest.approx(published, rel=tolerance, abs=0)
    as_json, as_yaml = tmp_path / f"{name}.json", tmp_path / f"{name}.yaml"
    as_json.write_text(json.dumps(config))
    as_yaml.write_text(yaml.safe_dump(config))
    out = tmp_path / "plan.json"
    argv = ["plan", "--model-config", str(as_json), "--seq-len", "128", "--batch", "64", "--systems", "2"]
    assert cli_main([*argv, "--json", str(out)]) == 0
    planned = json.loads(out.read_text())
    assert planned["params"] == model.params and planned["seq_len"] == 128 and planned["batch"] == 64
    assert planned["mode"] == "weight_streaming" and planned["samples_per_s"] > 0
    from_yaml = plan(load_model_config(as_yaml), systems=2, batch=64, seq_len=128)
    assert from_yaml.samples_per_s == pytest.approx(planned["samples_per_s"])


@pytest.mark.spec("PERF-024")
def test_llama_has_a_gated_mlp_grouped_query_attention_and_untied_embeddings():
    config = {**HF_CONFIGS["llama-2-70b"][0], "num_hidden_layers": 1}
    layers = model_from_config(config, seq_len=16).layers
    d, ffn, kv = 8192, 28672, 8 * 128
    by_name = {x.name: x for x in layers}
    assert by_name["block0.fc1"].out_features == 2 * ffn and by_name["block0.fc2"].in_features == ffn
    assert not by_name["block0.fc1"].bias and not by_name["block0.attn"].bias
    assert by_name["block0.attn"].params == 2 * d * d + 2 * d * kv
    assert by_name["lm_head"].params == d * 32000 and not by_name["lm_head"].tied
    assert by_name["block0.ln1"].params == d  # RMSNorm: a scale, no shift
    tied = model_from_config({**config, "tie_word_embeddings": True}, seq_len=16)
    assert model_from_config(config, seq_len=16).params - tied.params == d * 32000


@pytest.mark.spec("PERF-024")
def test_the_zoo_is_config_files_in_the_package():
    folder = resources.files("csconform.perf") / "configs"
    files = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".json"))
    assert files == sorted(f"{name}.json" for name in ZOO_NAMES)
    for name in ZOO_NAMES:
        config = json.loads((folder / f"{name}.json").read_text())
        assert get_model(name).params == model_from_config(config).params


BAD_CONFIGS = [
    ({"n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}, InvalidInputError, "model_type"),
    ({"model_type": "mamba"}, UnknownNameError, "llama"),
    (
        {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
        InvalidInputError,
        "n_layer or num_hidden_layers",
    ),
    (
        {
            "model_type": "gpt2",
            "n_layer": 2,
            "n_embd": 768,
            "hidden_size": 1024,
            "n_head": 12,
            "vocab_size": 50257,
            "n_positions": 1024,
        },
        InvalidInputError,
        "n_embd=768, hidden_size=1024",
    ),
    (
        {"model_type": "gpt2", "n_layer": 2, "n_embd": 768, "n_head": 10, "vocab_size": 50257, "n_positions": 1024},
        InvalidInputError,
        "attention heads",
    ),
    (
        {"model_type": "gpt2", "n_layer": "12", "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
        InvalidInputError,
        "n_layer",
    ),
    (
        {"model_type": "gpt2", "n_layer": 10**9, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
        InvalidInputError,
        "n_layer",
    ),
    (
        {
            "model_type": "llama",
            "num_hidden_layers": 2,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_key_value_heads": 5,
            "intermediate_size": 11008,
            "vocab_size": 32000,
            "max_position_embeddings": 4096,
        },
        InvalidInputError,
        "num_key_value_heads",
    ),
    (
        {
            "model_type": "bert",
            "num_hidden_layers": 2,
            "hidden_size": 768,
            "num_attention_heads": 12,
            "vocab_size": 30522,
            "max_position_embeddings": 512,
        },
        InvalidInputError,
        "intermediate_size",
    ),
    (
        {
            "model_type": "gptj",
            "n_layer": 2,
            "n_embd": 4096,
            "n_head": 16,
            "rotary_dim": 512,
            "vocab_size": 50400,
            "n_positions": 2048,
        },
        InvalidInputError,
        "rotary_dim",
    ),
    (
        {
            "model_type": "gpt2",
            "n_layer": 2,
            "n_embd": 64,
            "n_head": 4,
            "vocab_size": 100,
            "n_positions": 64,
            "activation_function": "swoosh",
        },
        InvalidInputError,
        "activation_function",
    ),
]


@pytest.mark.spec("PERF-025")
@pytest.mark.parametrize(("config", "error", "names"), BAD_CONFIGS)
def test_bad_configs_are_refused_naming_the_field(config, error, names, tmp_path, capsys):
    with pytest.raises(error) as info:
        model_from_config(config)
    assert names in str(info.value) and "\n" not in str(info.value)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert cli_main(["plan", "--model-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and names in err and "Traceback" not in err


@pytest.mark.spec("PERF-025")
def test_a_sequence_longer_than_the_positions_is_refused(tmp_path, capsys):
    with pytest.raises(InvalidInputError, match="n_positions"):
        model_from_config(HF_CONFIGS["gpt2"][0], seq_len=2048)
    with pytest.raises(InvalidInputError, match="max_position_embeddings"):
        plan(model_from_config(HF_CONFIGS["llama-2-70b"][0]), seq_len=8192, mode="weight_streaming")
    path = tmp_path / "gpt2.yaml"
    path.write_text(yaml.safe_dump(HF_CONFIGS["gpt2"][0]))
    assert cli_main(["plan", "--model-config", str(path), "--seq-len", "4096"]) == 2
    assert "n_positions" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{ not json")
    assert cli_main(["plan", "--model-config", str(tmp_path / "broken.json")]) == 2
    assert "invalid JSON" in capsys.readouterr().err


@pytest.mark.spec("PERF-025")
@settings(max_examples=100, deadline=None)
@given(config=model_configs())
def test_any_json_plans_or_is_refused_clearly(config):
    try:
        model = model_from_config(config)
    except CsConformError as error:
        assert isinstance(error, InvalidInputError) and str(error) and "\n" not in str(error)
        return
    try:
        result = plan(model, mode="weight_streaming", batch=2)
    except CsConformError as error:  # e.g. a layer too large for the wafer
        assert str(error) and "\n" not in str(error)
        return
    assert 0 < result.samples_per_s <= result.bound_samples_per_s


# --- more families, mixtures of experts, refusals, Model Zoo sections (PERF-032 to PERF-035) ---------

MISTRAL_7B = {
    "model_type": "mistral",
    "architectures": ["MistralForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}
MIXTRAL_8X7B = {
    **MISTRAL_7B,
    "model_type": "mixtral",
    "architectures": ["MixtralForCausalLM"],
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "sliding_window": None,
}
MORE_FAMILIES = {
    # name: (the architecture fields of the hub config.json, the published checkpoint's parameter count)
    "Mistral-7B-v0.1": (MISTRAL_7B, 7_241_732_096),  # safetensors total_size 14,483,464,192 B in bf16
    "Mixtral-8x7B-v0.1": (MIXTRAL_8X7B, 46_702_792_704),  # total_size 93,405,585,408 B in bf16
    "Qwen2-7B": (
        {
            "model_type": "qwen2",
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "max_position_embeddings": 131072,
            "num_attention_heads": 28,
            "num_hidden_layers": 28,
            "num_key_value_heads": 4,
            "tie_word_embeddings": False,
            "vocab_size": 152064,
        },
        7_615_616_512,  # total_size 15,231,233,024 B in bf16
    ),
    "phi-2": (
        {
            "model_type": "phi",
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "partial_rotary_factor": 0.4,
            "vocab_size": 51200,
        },
        2_779_683_840,  # total_size 5,559,367,680 B in fp16
    ),
    "falcon-7b": (
        {
            "model_type": "falcon",
            "hidden_size": 4544,
            "num_attention_heads": 71,
            "num_hidden_layers": 32,
            "multi_query": True,
            "parallel_attn": True,
            "vocab_size": 65024,
        },
        6_921_720_704,  # transformers' FalconForCausalLM from the hub config
    ),
    "opt-1.3b": (
        {
            "model_type": "opt",
            "hidden_size": 2048,
            "ffn_dim": 8192,
            "max_position_embeddings": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 24,
            "vocab_size": 50272,
            "word_embed_proj_dim": 2048,
        },
        1_315_758_080,
    ),
    "bloom-560m": (
        {"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24, "vocab_size": 250880},
        559_214_592,
    ),
    "roberta-base": (
        {
            "model_type": "roberta",
            "architectures": ["RobertaForMaskedLM"],
            "hidden_size": 768,
            "intermediate_size": 3072,
            "max_position_embeddings": 514,
            "num_attention_heads": 12,
            "num_hidden_layers": 12,
            "type_vocab_size": 1,
            "vocab_size": 50265,
        },
        124_697_433,
    ),
    "bert-base-uncased (masked LM)": (
        {**HF_CONFIGS["bert-base-uncased"][0], "architectures": ["BertForMaskedLM"]},
        109_514_298,
    ),
    "llama-7b (LLaMA-1)": (
        {
            "model_type": "llama",
            "architectures": ["LLaMAForCausalLM"],
            "hidden_size": 4096,
            "intermediate_size": 11008,
            "max_sequence_length": 2048,
            "num_attention_heads": 32,
            "num_hidden_layers": 32,
            "vocab_size": 32000,
        },
        6_738_415_616,
    ),
    "gpt2 (n_ctx 2048)": ({**HF_CONFIGS["gpt2"][0], "n_ctx": 2048}, 124_439_808),
}


@pytest.mark.spec("PERF-032")
@pytest.mark.parametrize("name", list(MORE_FAMILIES))
def test_more_families_count_their_checkpoints_exactly(name, tmp_path):
    config, published = MORE_FAMILIES[name]
    assert model_from_config(config).params == published
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "plan.json"
    assert cli_main(["plan", "--model-config", str(path), "--seq-len", "256", "--batch", "4", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["params"] == published


@pytest.mark.spec("PERF-032")
def test_heads_and_legacy_fields_are_said_in_the_notes():
    bert = model_from_config(MORE_FAMILIES["bert-base-uncased (masked LM)"][0])
    assert not {"pooler", "nsp"} & {layer.name for layer in bert.layers}
    assert any("no pooler" in note for note in bert.notes)
    gpt2 = model_from_config(MORE_FAMILIES["gpt2 (n_ctx 2048)"][0])
    assert gpt2.max_seq_len == 1024 and any("n_positions (1024) sets" in note for note in gpt2.notes)
    llama = model_from_config(MORE_FAMILIES["llama-7b (LLaMA-1)"][0])
    assert llama.max_seq_len == 2048 and any("max_sequence_length" in note for note in llama.notes)


@pytest.mark.spec("PERF-033")
def test_a_mixture_of_experts_streams_every_expert_and_computes_with_two():
    mixtral, mistral = model_from_config(MIXTRAL_8X7B, seq_len=1024), model_from_config(MISTRAL_7B, seq_len=1024)
    expert = 3 * 4096 * 14336
    assert mixtral.params - mixtral.active_params == 32 * 6 * expert  # 6 of 8 experts idle per token
    # with the same attention, the mixture computes like Mistral plus one more expert and the router per token
    assert mixtral.flops_per_sample - mistral.flops_per_sample == pytest.approx(3 * 2 * 1024 * 32 * (expert + 4096 * 8))
    result = plan(mixtral, systems=1, batch=8)
    assert (result.params, result.active_params) == (46_702_792_704, 12_879_925_248)
    streamed = result.breakdown["communication"]
    assert streamed["streamed_weight_bytes_per_step"] == 2 * 2 * result.params
    assert streamed["streamed_gradient_bytes_per_step"] == 4 * result.params
    as_dense = plan(mistral, systems=1, batch=8)
    assert result.streaming.step_s > as_dense.streaming.step_s


@pytest.mark.spec("PERF-034")
@pytest.mark.parametrize(
    ("data", "refusal", "key"),
    [
        (b'{"model_type": "gpt2",\x00\x01}', UnreadableDocumentError, None),
        ('{"model_type": "gpt2"}'.encode("utf-16"), UnreadableDocumentError, None),
        (b'{"model_type": "gpt2", "n_layer": 2, "n_embd": Infinity}', UnreadableDocumentError, "n_embd"),
        (b"[" * 50_000 + b"]" * 50_000, UnreadableDocumentError, None),
        (
            json.dumps({"model_type": "t5", "d_model": 512, "num_layers": 6}).encode(),
            UnsupportedModelError,
            "model_type",
        ),
    ],
)
def test_unreadable_and_encoder_decoder_configs_are_refused_naming_the_file(data, refusal, key, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_bytes(data)
    with pytest.raises(refusal) as info:
        load_model_config(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value) and info.value.key == key
    assert cli_main(["plan", "--model-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(path) in err and "Traceback" not in err


@pytest.mark.spec("PERF-034")
def test_a_field_of_the_wrong_type_names_its_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**MIXTRAL_8X7B, "num_local_experts": "8"}))
    with pytest.raises(ModelConfigError) as info:
        load_model_config(path)
    assert info.value.key == "num_local_experts" and str(path) in str(info.value)


ZOO_LLAMA2_7B = {  # the model: section of the Model Zoo 2.10 params_llama2_7b.yaml, architecture keys
    "name": "llama",
    "vocab_size": 32000,
    "hidden_size": 4096,
    "position_embedding_type": "rotary",
    "share_embedding_weights": False,
    "max_position_embeddings": 4096,
    "num_hidden_layers": 32,
    "norm_type": "rmsnorm",
    "num_heads": 32,
    "use_projection_bias_in_attention": False,
    "use_ffn_bias_in_attention": False,
    "filter_size": 11008,
    "nonlinearity": "swiglu",
    "use_ffn_bias": False,
    "use_bias_in_output": False,
}


@pytest.mark.spec("PERF-035")
def test_zoo_sections_of_both_release_lines_read_the_published_model():
    assert model_from_zoo_section(ZOO_LLAMA2_7B).params == 6_738_415_616  # Llama-2-7b's checkpoint
    first = {k: v for k, v in ZOO_LLAMA2_7B.items() if k not in ("name", "norm_type")}
    assert model_from_zoo_section({**first, "use_rms_norm": True}, family="llama").params == 6_738_415_616
    mixtral = {
        **ZOO_LLAMA2_7B,
        "name": "mixtral",
        "filter_size": 14336,
        "attention_module": "multiquery_attention",
        "extra_attention_params": {"num_kv_groups": 8},
        "moe": {"num_experts": 8, "top_k": 2},
    }
    model = model_from_zoo_section(mixtral, source="params_mixtral_8x7b.yaml: trainer.init.model")
    assert (model.params, model.active_params) == (46_702_792_704, 12_879_925_248)
    assert plan(model, systems=2, batch=8).samples_per_s > 0
    with pytest.raises(ModelConfigError, match="^params.yaml: model: field moe.top_k") as info:
        model_from_zoo_section({**mixtral, "moe": {"num_experts": 8, "top_k": "2"}}, source="params.yaml: model")
    assert info.value.key == "moe.top_k"


# --- the calibrated model (PERF-026 to PERF-029) -------------------------------------------------------


def gpt_config(layers: int, heads: int, head_dim: int, positions: int = 2048) -> dict:
    return {
        "model_type": "gpt2",
        "n_layer": layers,
        "n_embd": heads * head_dim,
        "n_head": heads,
        "vocab_size": 50257,
        "n_positions": positions,
    }


@pytest.mark.spec("PERF-026")
@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 48),
    heads=st.integers(1, 40),
    head_dim=st.sampled_from([32, 64, 128]),
    seq_len=st.integers(16, 2048),
    batch=st.integers(1, 2048),
    grow=st.sampled_from(["layers", "heads"]),
    wafer=st.sampled_from(["wse2", "wse3"]),
)
def test_bigger_models_are_never_faster(layers, heads, head_dim, seq_len, batch, grow, wafer):
    small = model_from_config(gpt_config(layers, heads, head_dim), seq_len=seq_len)
    bigger = gpt_config(layers + 1, heads, head_dim) if grow == "layers" else gpt_config(layers, heads + 1, head_dim)
    big = model_from_config(bigger, seq_len=seq_len)
    rate_small = weight_streaming(small.layers, wafer, 1, batch).samples_per_s
    rate_big = weight_streaming(big.layers, wafer, 1, batch).samples_per_s
    assert rate_big <= rate_small * (1 + 1e-12)


@pytest.mark.spec("PERF-026")
@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["bert_base", "gpt2_small", "gpt3_xl", "gpt3_13b", "llama2_7b"]),
    batch=st.integers(1, 4096),
    systems=st.sampled_from([1, 4, 64]),
    wafer=st.sampled_from(["wse2", "wse3"]),
)
def test_larger_batches_are_never_slower_up_to_a_plateau(name, batch, systems, wafer):
    layers = get_model(name).layers
    one = weight_streaming(layers, wafer, systems, batch)
    two = weight_streaming(layers, wafer, systems, 2 * batch)
    plateau = one.plateau_samples_per_s
    assert two.plateau_samples_per_s == pytest.approx(plateau)
    assert one.samples_per_s <= two.samples_per_s * (1 + 1e-12) <= plateau * (1 + 1e-9)
    assert one.samples_per_s <= one.bound_samples_per_s
    huge = weight_streaming(layers, wafer, systems, 1 << 22)
    assert huge.samples_per_s >= 0.98 * plateau


@pytest.mark.spec("PERF-027")
@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["bert_large", "gpt2_small", "gpt3_xl", "gpt_neox_20b", "llama2_70b"]),
    per_system=st.integers(1, 512),
    systems=st.integers(2, 192),
    wafer=st.sampled_from(["wse2", "wse3"]),
)
def test_n_systems_are_never_more_than_n_times_one(name, per_system, systems, wafer):
    layers = get_model(name).layers
    one = weight_streaming(layers, wafer, 1, per_system).samples_per_s
    weak = weight_streaming(layers, wafer, systems, per_system).samples_per_s
    assert weak <= systems * one * (1 + 1e-12)
    global_batch = per_system * systems
    one_system_all = weight_streaming(layers, wafer, 1, global_batch).samples_per_s
    assert weak <= systems * one_system_all * (1 + 1e-12)


@pytest.mark.spec("PERF-028")
def test_the_calibrated_model_predicts_the_measured_runs():
    record = calibration_record()
    cal = fitted()
    for name in ("matmul_efficiency", "attention_efficiency"):
        assert 0 < getattr(cal, name) <= 1
    assert cal.layer_latency_s >= 0 and cal.input_tokens_per_s > 0 and cal.micro_batch_tokens > 0
    assert set(PARAMETERS) <= set(record["parameters"])
    data = fitted_runs(runs(read_measured(measured_csv())))
    assert record["fitted_on"] and record["data"]["rows"] == len(data) >= 26
    assert record["data"]["sha256"] == hashlib.sha256(measured_csv().read_bytes()).hexdigest()
    logs = [math.log(run.predict(cal) / run.measured_samples_per_s) for run in data]
    assert error(logs) <= 1.25 and worst(logs) <= 1.5
    assert error(logs) == pytest.approx(record["fit"]["error"], abs=2e-3)
    # grouped cross-validation: runs of a family, source or release the fit never saw are further off
    assert record["fit"]["error"] < record["fit"]["held_out_error"] <= 1.4
    assert record["band"]["factor"] >= record["fit"]["held_out_error"] and record["band"]["coverage"] == 0.9
    # the uncalibrated model (peak compute, no latency, unlimited input) is far off: the figures matter
    ideal = [math.log(run.predict(IDEAL) / run.measured_samples_per_s) for run in data]
    assert error(ideal) > 2


@pytest.mark.spec("PERF-029")
@pytest.mark.parametrize("name", ["gpt3_6.7b", "gpt3_13b"])
def test_a_wse3_is_about_twice_a_wse2(name):
    layers = get_model(name).layers
    wse3, wse2 = (weight_streaming(layers, wafer, 1, 128).samples_per_s for wafer in ("wse3", "wse2"))
    ratio = wse3 / wse2
    assert 1.8 <= ratio <= 2.6
