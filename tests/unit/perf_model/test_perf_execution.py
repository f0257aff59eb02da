"""Unit tests of the weight-streaming and pipelined execution models and of plan()."""

from __future__ import annotations

import json

import pytest

from csconform.cli import main as cli_main
from csconform.errors import CapacityError, InvalidInputError
from csconform.perf.execution.efficiency import fitted
from csconform.perf.execution.pipelined import pipelined, pipelined_memory_bytes
from csconform.perf.execution.streaming import strong_scaling_efficiency, weight_streaming
from csconform.perf.models.layer import Layer
from csconform.perf.models.zoo import get_model
from csconform.perf.plan import plan

PLAN_KEYS = {
    "model",
    "wafer",
    "mode",
    "params",
    "seq_len",
    "flops_per_sample",
    "samples_per_s",
    "bound_samples_per_s",
    "fabric",
    "kernels",
    "breakdown",
}


def test_a_shard_beyond_the_lanes_runs_in_micro_batches_and_the_rate_is_flat():
    """The lanes hold micro_batch_tokens tokens: a shard of four times that runs as four micro-batches,
    each a whole pass, so throughput no longer rises with the batch; a shard within the lanes is one."""
    model = get_model("gpt3_xl")
    cal = fitted()
    lanes = cal.micro_batch_tokens / model.seq_len  # samples per micro-batch
    result = weight_streaming(model.layers, "wse2", 1, round(4 * lanes))
    assert result.micro_batch == pytest.approx(lanes) and result.micro_batches == pytest.approx(
        round(4 * lanes) / lanes
    )
    assert result.micro_batch * result.micro_batches == pytest.approx(result.batch_per_system)
    twice = weight_streaming(model.layers, "wse2", 1, round(8 * lanes))
    assert twice.samples_per_s == pytest.approx(result.samples_per_s, rel=1e-2)
    assert twice.samples_per_s == pytest.approx(result.lane_samples_per_s, rel=1e-2)
    within = weight_streaming(model.layers, "wse2", 1, max(1, int(lanes / 2)))
    assert within.micro_batches == 1 and within.samples_per_s < result.samples_per_s


def test_a_micro_batch_asked_for_below_the_lanes_splits_the_shard_and_one_above_runs_at_the_lanes():
    """A params file's micro_batch_size smaller than the lanes: more micro-batches, each paying the per-layer
    latency and the weight traffic again, so the step is longer and the plateau lower; a larger one
    changes nothing (the lanes hold no more)."""
    model = get_model("gpt3_xl")
    lanes = fitted().micro_batch_tokens / model.seq_len
    batch = 8 * round(lanes)
    free = weight_streaming(model.layers, "wse2", 1, batch)
    small = weight_streaming(model.layers, "wse2", 1, batch, micro_batch=8)
    assert (small.micro_batch, small.micro_batches) == (8, batch / 8)
    assert small.latency_s == pytest.approx(free.latency_s * free.micro_batch / 8)
    assert small.compute_s == pytest.approx(free.compute_s)  # the same samples' work
    assert small.samples_per_s < free.samples_per_s and small.lane_samples_per_s < free.lane_samples_per_s
    large = weight_streaming(model.layers, "wse2", 1, batch, micro_batch=batch)
    assert (large.micro_batch, large.samples_per_s) == (free.micro_batch, free.samples_per_s)
    with pytest.raises(InvalidInputError, match="micro_batch"):
        weight_streaming(model.layers, "wse2", 1, batch, micro_batch=0)


def test_a_plan_follows_the_micro_batch_asked_for_and_says_what_it_does():
    lanes = fitted().micro_batch_tokens / 2048
    split = plan("llama2_7b", wafer="wse3", batch=960, seq_len=2048, micro_batch=20)
    assert split.streaming.micro_batches == 48
    assert (
        f"micro-batch 20 asked for: 48 micro-batch(es) a step where the lanes ({lanes:.4g} samples, "
        f"micro_batch_tokens, fitted) would need {960 / lanes:.3g}; each pays the per-layer latency and streams "
        "the weights again"
    ) in split.notes
    held = plan("llama2_7b", wafer="wse3", batch=960, seq_len=2048, micro_batch=480)
    assert (
        f"micro-batch 480 asked for; the lanes hold {lanes:.4g} samples (micro_batch_tokens, fitted), so the step "
        f"runs {960 / lanes:.3g} micro-batch(es) of {lanes:.4g}"
    ) in held.notes
    free = plan("llama2_7b", wafer="wse3", batch=960, seq_len=2048)
    assert held.samples_per_s == free.samples_per_s > split.samples_per_s
    assert not any("micro-batch" in note for note in free.notes)


def test_a_micro_batch_that_does_not_divide_the_shard_runs_an_average_count_and_pipelined_mode_none():
    """From 2.3.0 a micro-batch need not divide the batch (CONFIG-013 is 2.0.2 to 2.2.1): the count is the
    shard over it, not rounded up, as for the lanes."""
    assert plan("gpt3_xl", systems=2, batch=960, micro_batch=7).streaming.micro_batches == pytest.approx(480 / 7)
    with pytest.raises(InvalidInputError, match="pipelined mode runs none"):
        plan("bert_base", mode="pipelined", micro_batch=8)
    chosen = plan("bert_base", wafer="wse1", batch=64, micro_batch=8)  # a WSE-1 runs what fits pipelined
    assert chosen.mode == "pipelined"
    assert "micro-batch 8 not used: pipelined mode runs no micro-batches" in chosen.notes


def test_streaming_refuses_when_one_sample_cannot_fit():
    huge_activation = [Layer("dense", 1024, 1024, 10_000_000, name="wide")]
    with pytest.raises(CapacityError) as refused:
        weight_streaming(huge_activation, "wse2")
    assert str(refused.value) == (
        "one sample's activations (6.14e+10 B) and layer 'wide' (1.05e+06 parameters, double-buffered) do not fit "
        "the wse2 wafer (3.66e+10 B): csconform keeps every activation the backward pass reads on the wafer and "
        "models no recomputation or offloading, so it cannot plan this sequence length"
    )
    with pytest.raises(InvalidInputError):
        weight_streaming(huge_activation, "wse2", batch_per_system=0)


def test_strong_scaling_falls_when_shards_shrink():
    layers = get_model("gpt3_xl").layers
    assert strong_scaling_efficiency(layers, "wse2", 192, 192) < 0.5
    assert strong_scaling_efficiency(layers, "wse2", 2, 3072) > 0.95
    with pytest.raises(InvalidInputError):
        strong_scaling_efficiency(layers, "wse2", 7, 100)


def test_pipelined_refuses_too_big_and_reports_memory():
    layers = get_model("gpt3_xl").layers
    with pytest.raises(CapacityError, match="weight streaming"):
        pipelined(layers, "wse2")
    assert pipelined_memory_bytes(layers) > 40e9


def test_plan_from_a_description_and_json():
    layers = [Layer("dense", 784, 500, name="fc1"), Layer("dense", 500, 10, name="fc2")]
    p = plan(layers, "wse2", mode="pipelined", batch=32)
    data = json.loads(p.to_json())
    assert set(data) >= PLAN_KEYS
    assert data["mode"] == "pipelined" and [k["name"] for k in data["kernels"]] == ["fc1", "fc2"]
    assert {"compute", "communication", "memory"} <= set(data["breakdown"])
    for part in data["breakdown"].values():
        assert part["formula"] and part["sources"]
    with pytest.raises(InvalidInputError):
        plan([], "wse2")
    with pytest.raises(InvalidInputError):
        plan(layers, "wse2", seq_len=8)
    with pytest.raises(InvalidInputError, match="known modes"):
        plan(layers, "wse2", mode="tensor_parallel")
    with pytest.raises(InvalidInputError):
        plan(layers, "wse2", batch=0)


def test_weight_streaming_plan_json():
    data = json.loads(plan("gpt3_175b", "wse2", systems=16).to_json())
    assert set(data) >= PLAN_KEYS and data["mode"] == "weight_streaming"
    assert data["batch"] % 16 == 0
    assert all(k["width"] == data["fabric"]["width"] for k in data["kernels"])


def test_cli_writes_json_and_png(tmp_path, capsys):
    out, png = tmp_path / "plan.json", tmp_path / "map.png"
    assert cli_main(["plan", "--model", "fc_mnist", "--wafer", "wse2", "--json", str(out), "--png", str(png)]) == 0
    assert set(json.loads(out.read_text())) >= PLAN_KEYS
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png2 = tmp_path / "ws.png"
    assert cli_main(["plan", "--model", "gpt3_xl", "--systems", "4", "--json", str(out), "--png", str(png2)]) == 0
    assert png2.stat().st_size > 0
    assert "samples/s" in capsys.readouterr().out


def test_cli_plans_the_micro_batch_asked_for(tmp_path, capsys):
    out = tmp_path / "plan.json"
    argv = ["plan", "--model", "llama2_7b", "--batch", "960", "--seq-len", "2048", "--micro-batch", "20"]
    assert cli_main([*argv, "--json", str(out)]) == 0
    assert "note: micro-batch 20 asked for: 48 micro-batch(es) a step" in capsys.readouterr().out
    assert json.loads(out.read_text())["breakdown"]["memory"]["micro_batches"] == 48


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--model", "gpt3_175b", "--mode", "pipelined"],
        ["plan", "--model", "gpt3_xl", "--systems", "500"],
        ["plan", "--model", "gpt3_xl", "--wafer", "tpu"],
        ["plan", "--model", "gpt3_xl", "--batch", str(2**63)],  # past int64: refused where it enters
        ["plan", "--model", "gpt3_xl", "--mode", "pipelined", "--micro-batch", "8"],
        ["plan", "--model", "gpt3_xl", "--micro-batch", "0"],
    ],
)
def test_cli_refusals_exit_2(argv, capsys):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("csconform: error:") and "Traceback" not in err
