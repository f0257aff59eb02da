"""Unit tests of the per-kernel cost models and the model zoo."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csconform.errors import InvalidInputError, UnknownNameError
from csconform.perf.models.kernels import group_kernels
from csconform.perf.models.layer import Layer, model_flops_per_sample, total_params
from csconform.perf.models.zoo import ZOO_NAMES, canonical_name, get_model


@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 64))
def test_dense_costs(i, o, t):
    layer = Layer("dense", i, o, t)
    assert layer.params == i * o + o
    assert layer.forward_flops == 2 * i * o * t
    assert layer.backward_flops == 2 * layer.forward_flops
    assert layer.input_bytes == 2 * i * t and layer.output_bytes == 2 * o * t
    assert layer.weight_bytes == 4 * layer.params
    assert layer.optimizer_state_bytes("adam") == 12 * layer.params
    assert layer.optimizer_state_bytes("sgd") == 4 * layer.params


def test_attention_counts_projections_and_scores():
    d, t = 64, 16
    layer = Layer("attention", d, d, t, heads=4)
    assert layer.params == 4 * d * d + 4 * d
    assert layer.forward_flops == 2 * 4 * d * d * t + 2 * 2 * t * t * d
    assert layer.activation_bytes_per_sample == 2 * 5 * d * t


def test_conv_embedding_norm_and_tied():
    conv = Layer("conv", 3, 64, 112 * 112, kernel_size=7, stride=2, bias=False)
    assert conv.params == 7 * 7 * 3 * 64
    assert conv.input_bytes == 2 * 3 * 224 * 224
    embedding = Layer("embedding", 1000, 32, 8)
    assert embedding.params == 32_000 and embedding.forward_flops == 0
    assert Layer("layer_norm", 10, 10, 3).params == 20
    tied = Layer("dense", 32, 1000, 8, tied=True, bias=False)
    assert tied.params == 0 and tied.used_params == 32_000 and tied.forward_flops > 0


def test_update_amortised_over_batch():
    layer = Layer("dense", 100, 100)
    assert layer.training_flops_per_sample(1) > layer.training_flops_per_sample(100)
    with pytest.raises(InvalidInputError):
        layer.training_flops_per_sample(0)
    with pytest.raises(InvalidInputError, match="known optimizers"):
        layer.weight_update_flops("lamb")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "lstm", "in_features": 1, "out_features": 1},
        {"kind": "dense", "in_features": 0, "out_features": 1},
        {"kind": "dense", "in_features": 1, "out_features": 1, "tokens": 1.5},
        {"kind": "attention", "in_features": 8, "out_features": 8, "heads": 0},
        {"kind": "layer_norm", "in_features": 8, "out_features": 9},
        {"kind": "dense", "in_features": 2**63, "out_features": 1},  # past int64
        {"kind": "dense", "in_features": 8, "out_features": 8, "experts": 2**63},
    ],
)
def test_layer_validation(kwargs):
    with pytest.raises(InvalidInputError):
        Layer(**kwargs)


def test_group_kernels_fuses_consecutive_groups():
    layers = [
        Layer("dense", 4, 4, name="a"),
        Layer("dense", 4, 4, name="b1", group="g"),
        Layer("dense", 4, 8, name="b2", group="g"),
        Layer("dense", 8, 2, name="c"),
    ]
    kernels = group_kernels(layers)
    assert [k.name for k in kernels] == ["a", "g", "c"]
    assert kernels[1].params == layers[1].params + layers[2].params
    assert kernels[1].input_bytes == layers[1].input_bytes and kernels[1].output_bytes == layers[2].output_bytes
    with pytest.raises(InvalidInputError):
        group_kernels([])
    with pytest.raises(InvalidInputError, match="unique"):
        group_kernels([Layer("dense", 1, 1, name="x"), Layer("dense", 1, 1, name="x")])
    assert total_params(layers) == sum(k.params for k in kernels)
    assert model_flops_per_sample(layers) == sum(k.forward_flops + k.backward_flops for k in kernels)


def test_resnet50_forward_macs():
    model = get_model("resnet50")
    macs = sum(x.forward_flops for x in model.layers if x.kind in ("conv", "dense")) / 2
    assert macs == pytest.approx(4.09e9, rel=0.02)  # the commonly quoted 4.1 GMACs at 224 x 224
    assert model.params == 25_557_032


@pytest.mark.parametrize("name", ZOO_NAMES)
def test_zoo_entries_build(name):
    model = get_model(name)
    assert model.params > 0 and model.flops_per_sample > 0
    assert canonical_name(name) == name


@pytest.mark.parametrize(
    ("alias", "name"), [("GPT-3 XL", "gpt3_xl"), ("gpt3-1.3b", "gpt3_xl"), ("BERT-base", "bert_base")]
)
def test_aliases(alias, name):
    assert canonical_name(alias) == name


def test_seq_len_override_and_refusals():
    assert get_model("gpt2_small", seq_len=128).seq_len == 128
    assert get_model("gpt2_small", seq_len=128).flops_per_sample < get_model("gpt2_small").flops_per_sample
    with pytest.raises(InvalidInputError):
        get_model("gpt2_small", seq_len=4096)
    with pytest.raises(InvalidInputError):
        get_model("resnet50", seq_len=16)
    with pytest.raises(UnknownNameError, match="gpt3_175b"):
        get_model("llama")
