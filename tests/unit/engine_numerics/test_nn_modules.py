"""The layer library's own contracts: parameters, module structure, the tape, losses, dropout."""

from __future__ import annotations

import numpy as np
import pytest

from csconform import engine
from csconform.engine import nn, precision
from csconform.errors import InvalidInputError


@pytest.fixture(autouse=True)
def float32_on_cpu():
    engine.reset()
    engine.set_target("cpu")
    precision.set_compute_precision("float32")
    yield
    engine.reset()


def test_parameter_is_float32_and_checks_its_gradient():
    parameter = nn.Parameter(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert parameter.data.dtype == np.float32 and parameter.grad is None
    parameter.grad = np.ones((2, 3), dtype=np.float64)
    assert parameter.grad.dtype == np.float32
    with pytest.raises(InvalidInputError, match="shape"):
        parameter.grad = np.ones(3)
    with pytest.raises(InvalidInputError):
        nn.Parameter([1.0, np.nan])


def test_gradients_accumulate_until_zero_grad():
    layer = nn.Linear(3, 2)
    x = np.ones((4, 3), np.float32)
    for _ in range(2):
        nn.mse_loss(layer(x), np.zeros((4, 2))).backward()
    once = layer.weight.grad.copy()
    layer.zero_grad()
    assert layer.weight.grad is None
    nn.mse_loss(layer(x), np.zeros((4, 2))).backward()
    np.testing.assert_allclose(once, 2 * layer.weight.grad, rtol=1e-6)


def test_named_parameters_state_dict_round_trip():
    model = nn.fc_mnist(hidden=8, inputs=5, classes=3)
    names = [name for name, _ in model.named_parameters()]
    assert names == [f"layers.{i}.{kind}" for i in (0, 2, 4) for kind in ("weight", "bias")]
    state = model.state_dict()
    state["layers.0.weight"][...] = 0.0  # a copy: the model is not changed
    assert not np.all(model.layers[0].weight.data == 0.0)
    other = nn.fc_mnist(hidden=8, inputs=5, classes=3)
    other.load_state_dict(model.state_dict())
    for (_, a), (_, b) in zip(model.named_parameters(), other.named_parameters(), strict=True):
        assert np.array_equal(a.data, b.data)


def test_load_state_dict_refuses_mismatches():
    model = nn.Linear(3, 2)
    with pytest.raises(InvalidInputError, match="missing"):
        model.load_state_dict({"weight": np.zeros((2, 3))})
    with pytest.raises(InvalidInputError, match="shape"):
        model.load_state_dict({"weight": np.zeros((3, 2)), "bias": np.zeros(2)})


def test_train_and_eval_reach_every_child():
    block = nn.TransformerBlock(8, 2, dropout=0.5)
    block.eval()
    assert not block.attn_dropout.training and not block.attn.qkv.training
    block.train()
    assert block.mlp_dropout.training


def test_dropout_is_seeded_scaled_and_off_in_eval():
    x = np.ones((200, 50), np.float32)
    first, second = nn.Dropout(0.25, seed=3), nn.Dropout(0.25, seed=3)
    y = first(x)
    assert np.array_equal(y, second(x))
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    grad = first.backward(np.ones_like(x))
    assert np.array_equal(grad == 0, y == 0)
    first.eval()
    assert np.array_equal(first(x), x)
    with pytest.raises(InvalidInputError):
        nn.Dropout(1.0)


def test_the_tape_chains_top_level_calls():
    first, second = nn.Linear(4, 3), nn.Linear(3, 2)
    x = np.random.default_rng(0).standard_normal((5, 4))
    nn.mse_loss(second(first(x)), np.zeros((5, 2))).backward()
    assert first.weight.grad is not None and second.weight.grad is not None

    together = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    together.load_state_dict(
        {
            "layers.0.weight": first.weight.data,
            "layers.0.bias": first.bias.data,
            "layers.1.weight": second.weight.data,
            "layers.1.bias": second.bias.data,
        }
    )
    nn.mse_loss(together(x), np.zeros((5, 2))).backward()
    assert np.array_equal(together.layers[0].weight.grad, first.weight.grad)


def test_identity_calls_keep_the_chain():
    layer, dropout = nn.Linear(3, 2), nn.Dropout(0.5)
    dropout.eval()
    out = dropout(layer(np.ones((2, 3))))
    nn.mse_loss(out, np.zeros((2, 2))).backward()  # must terminate and reach the Linear layer
    assert layer.weight.grad is not None


def test_a_loss_on_plain_data_has_no_model_to_drive():
    loss = nn.mse_loss(np.ones(3), np.zeros(3))
    assert loss.value == np.float32(1.0)
    loss.backward()  # nothing recorded: no error, nothing to do


def test_scaled_loss_multiplies_value_and_gradients():
    layer = nn.Linear(3, 2)
    x, y = np.ones((2, 3)), np.array([0, 1])
    nn.cross_entropy(layer(x), y).backward()
    plain = layer.weight.grad.copy()
    layer.zero_grad()
    scaled = 4.0 * nn.cross_entropy(layer(x), y)
    assert scaled.scale == np.float32(4.0)
    scaled.backward()
    assert np.array_equal(layer.weight.grad, plain * np.float32(4.0))
    with pytest.raises(TypeError):
        scaled * "two"


@pytest.mark.parametrize(
    "build, bad_input",
    [
        (lambda: nn.Linear(3, 2), np.ones((2, 4))),
        (lambda: nn.Linear(3, 2), np.array(["a", "b", "c"])),
        (lambda: nn.Embedding(5, 2), np.array([0, 5])),
        (lambda: nn.Embedding(5, 2), np.array([0.5])),
        (lambda: nn.MultiHeadSelfAttention(4, 2), np.ones((3, 4))),
        (lambda: nn.LayerNorm(3), np.ones((2, 4))),
    ],
)
def test_bad_inputs_are_refused_clearly(build, bad_input):
    with pytest.raises(InvalidInputError):
        build()(bad_input)


@pytest.mark.parametrize(
    "build",
    [
        lambda: nn.Linear(0, 2),
        lambda: nn.MultiHeadSelfAttention(6, 4),
        lambda: nn.Sequential(3),
        lambda: nn.LayerNorm(-1),
    ],
)
def test_bad_layer_arguments_are_refused(build):
    with pytest.raises(InvalidInputError):
        build()


def test_loss_inputs_are_checked():
    with pytest.raises(InvalidInputError):
        nn.cross_entropy(np.ones((3, 4)), np.array([0, 1]))
    with pytest.raises(InvalidInputError):
        nn.cross_entropy(np.ones((2, 4)), np.array([0, 4]))
    with pytest.raises(InvalidInputError):
        nn.cross_entropy(np.ones((2, 4)), np.array([0.0, 1.0]))
    with pytest.raises(InvalidInputError):
        nn.mse_loss(np.ones(3), np.ones(4))


def test_causal_attention_ignores_later_positions():
    attention = nn.MultiHeadSelfAttention(8, 2, causal=True)
    x = np.random.default_rng(1).standard_normal((1, 5, 8)).astype(np.float32)
    changed = x.copy()
    changed[0, 3:] += 10.0
    assert np.allclose(attention(x)[0, :3], attention(changed)[0, :3], atol=1e-6)
    assert not np.allclose(attention(x)[0, 3:], attention(changed)[0, 3:])


def test_mixed_precision_rounds_operands_to_the_half_dtype():
    engine.reset()  # cs, mixed, float16
    layer = nn.Linear(2, 1, bias=False)
    layer.weight.data[...] = [[1.0, 1.0]]
    x = np.array([[1.0 + 2.0**-12, 0.0]], np.float32)  # below float16 resolution at 1.0
    assert layer(x)[0, 0] == np.float32(1.0)
    precision.set_half_dtype("cbfloat16")
    assert layer(np.array([[70000.0, 0.0]], np.float32))[0, 0] == np.float32(70016.0)
