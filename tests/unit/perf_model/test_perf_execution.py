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


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--model", "gpt3_175b", "--mode", "pipelined"],
        ["plan", "--model", "gpt3_xl", "--systems", "500"],
        ["plan", "--model", "gpt3_xl", "--wafer", "tpu"],
        ["plan", "--model", "gpt3_xl", "--batch", str(2**63)],  # past int64: refused where it enters
    ],
)
def test_cli_refusals_exit_2(argv, capsys):
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("csconform: error:") and "Traceback" not in err
