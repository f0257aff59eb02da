"""Gradients of the engine's layers against float64 finite differences (specs/precision.yaml).

Every layer is rebuilt here as an independent float64 NumPy function of (parameters, input). The
engine's backward pass, driven with a random output gradient R, must match the central finite
differences of sum(reference(params, x) * R): exactly up to float32 accuracy in float32 compute
precision on cpu (PRECISION-018), and up to 16-bit rounding error in mixed precision (PRECISION-019).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

Params = dict[str, np.ndarray]


# --- independent float64 references ---------------------------------------------------------------


def linear(x, params: Params, prefix: str) -> np.ndarray:
    return x @ params[f"{prefix}weight"].T + params[f"{prefix}bias"]


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, params: Params, prefix: str, eps: float = 1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * params[f"{prefix}weight"] + params[f"{prefix}bias"]


def self_attention(x, params: Params, prefix: str, heads: int, causal: bool):
    batch, seq, d_model = x.shape
    head_dim = d_model // heads
    qkv = linear(x, params, f"{prefix}qkv.").reshape(batch, seq, 3, heads, head_dim)
    q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
    if causal:
        scores = np.where(np.triu(np.ones((seq, seq), bool), 1), -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, seq, d_model)
    return linear(context, params, f"{prefix}proj.")


def transformer_block(x, params: Params, heads: int, causal: bool):
    h = x + self_attention(layer_norm(x, params, "ln1."), params, "attn.", heads, causal)
    return h + linear(gelu_tanh(linear(layer_norm(h, params, "ln2."), params, "fc1.")), params, "fc2.")


# --- the cases: (engine model factory, input factory, float64 reference) ---------------------------


def case_linear(engine):
    return engine.nn.Linear(5, 4), lambda rng: rng.standard_normal((3, 5)), lambda p, x: linear(x, p, "")


def case_activations(engine):
    nn = engine.nn
    model = nn.Sequential(nn.Linear(5, 6), nn.GELU(), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 4), nn.ReLU())

    def reference(p, x):
        h = np.tanh(linear(gelu_tanh(linear(x, p, "layers.0.")), p, "layers.2."))
        return np.maximum(linear(h, p, "layers.4."), 0.0)

    return model, lambda rng: rng.standard_normal((4, 5)), reference


def case_layer_norm(engine):
    model = engine.nn.LayerNorm(6)
    rng = np.random.default_rng(0)
    model.load_state_dict({"weight": rng.uniform(0.5, 1.5, 6), "bias": rng.standard_normal(6)})
    return model, lambda rng: rng.standard_normal((2, 3, 6)) * 2 + 1, lambda p, x: layer_norm(x, p, "")


def case_attention(causal: bool):
    def build(engine):
        model = engine.nn.MultiHeadSelfAttention(8, 2, causal=causal)
        return model, lambda rng: rng.standard_normal((2, 5, 8)), lambda p, x: self_attention(x, p, "", 2, causal)

    return build


def case_block(engine):
    model = engine.nn.TransformerBlock(8, 2, d_ff=12, causal=True)
    return model, lambda rng: rng.standard_normal((2, 4, 8)), lambda p, x: transformer_block(x, p, 2, True)


def case_embedding(engine):
    model = engine.nn.Sequential(engine.nn.Embedding(7, 4), engine.nn.Linear(4, 3))

    def reference(p, indices):
        return linear(p["layers.0.weight"][indices], p, "layers.1.")

    return model, lambda rng: rng.integers(0, 7, (3, 4)), reference


CASES: dict[str, Callable] = {
    "linear": case_linear,
    "gelu-tanh-relu": case_activations,
    "layernorm": case_layer_norm,
    "attention": case_attention(False),
    "causal-attention": case_attention(True),
    "transformer-block": case_block,
    "embedding": case_embedding,
}


def finite_difference(function: Callable[[np.ndarray], float], point: np.ndarray, index, step: float = 1e-6) -> float:
    plus, minus = point.copy(), point.copy()
    plus[index] += step
    minus[index] -= step
    return (function(plus) - function(minus)) / (2 * step)


def gradient_pairs(engine, name: str, seed: int, samples: int = 4):
    """(engine gradient, float64 finite difference) at sampled coordinates of every weight and input."""
    rng = np.random.default_rng(seed)
    model, make_input, reference = CASES[name](engine)
    x = make_input(rng)
    out = model(x)
    grad_out = rng.standard_normal(out.shape)
    grad_in = model.backward(grad_out.astype(np.float32))
    params = {key: value.astype(np.float64) for key, value in model.state_dict().items()}
    engine_grads = {key: p.grad for key, p in model.named_parameters()}

    def objective(p: Params, inputs) -> float:
        return float(np.sum(reference(p, inputs) * grad_out))

    pairs = []
    for key, value in params.items():
        for flat in rng.choice(value.size, size=min(samples, value.size), replace=False):
            index = np.unravel_index(flat, value.shape)

            def objective_of(v: np.ndarray, key: str = key) -> float:
                return objective({**params, key: v}, x)

            fd = finite_difference(objective_of, value, index)
            pairs.append((engine_grads[key][index], fd))
    if x.dtype.kind == "f":
        x64 = x.astype(np.float32).astype(np.float64)
        for flat in rng.choice(x64.size, size=samples, replace=False):
            index = np.unravel_index(flat, x64.shape)
            pairs.append((grad_in[index], finite_difference(lambda v: objective(params, v), x64, index)))
    forward_error = np.max(np.abs(out - reference(params, x.astype(np.float32) if x.dtype.kind == "f" else x)))
    return np.array(pairs, dtype=np.float64), forward_error


@pytest.mark.spec("PRECISION-018")
@pytest.mark.parametrize("name", sorted(CASES))
@given(seed=st.integers(0, 2**16))
@settings(max_examples=5)
def test_float32_gradients_match_finite_differences(engine, name, seed):
    engine.reset()
    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    pairs, forward_error = gradient_pairs(engine, name, seed)
    assert forward_error < 1e-4
    np.testing.assert_allclose(pairs[:, 0], pairs[:, 1], rtol=1e-3, atol=1e-4)


@pytest.mark.spec("PRECISION-019")
@pytest.mark.parametrize("name", sorted(CASES))
@given(seed=st.integers(0, 2**16))
@settings(max_examples=3)
def test_mixed_precision_gradients_are_close(engine, name, seed):
    engine.reset()
    engine.precision.set_half_dtype("float16")
    engine.precision.set_compute_precision("mixed")  # explicitly: the default only on cs (PRECISION-020)
    pairs, forward_error = gradient_pairs(engine, name, seed, samples=6)
    assert forward_error < 0.05
    error = np.linalg.norm(pairs[:, 0] - pairs[:, 1])
    assert error <= 0.02 * np.linalg.norm(pairs[:, 1]) + 1e-3


@pytest.mark.spec("PRECISION-018")
@pytest.mark.parametrize("loss", ["cross_entropy", "mse_loss"])
def test_losses_drive_backward_and_scale(engine, loss):
    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    rng = np.random.default_rng(21)
    model = engine.nn.Sequential(engine.nn.Linear(5, 4), engine.nn.Tanh(), engine.nn.Linear(4, 3))
    x = rng.standard_normal((6, 5))
    target = rng.integers(0, 3, 6) if loss == "cross_entropy" else rng.standard_normal((6, 3))
    loss_fn = getattr(engine.nn, loss)
    params = {key: value.astype(np.float64) for key, value in model.state_dict().items()}

    def reference(p: Params) -> float:
        logits = linear(np.tanh(linear(x, p, "layers.0.")), p, "layers.2.")
        if loss == "mse_loss":
            return float(np.mean((logits - target) ** 2))
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return float(-log_probs[np.arange(6), target].mean())

    value = loss_fn(model(x), target)
    assert isinstance(value.value, np.float32)
    assert abs(float(value.value) - reference(params)) < 1e-5
    value.backward()
    plain = {key: p.grad.copy() for key, p in model.named_parameters()}
    for key, grad in plain.items():
        for flat in range(0, grad.size, 3):
            index = np.unravel_index(flat, grad.shape)
            fd = finite_difference(lambda v, key=key: reference({**params, key: v}), params[key], index)
            assert abs(grad[index] - fd) <= 1e-3 * abs(fd) + 1e-5

    model.zero_grad()
    scaled = loss_fn(model(x), target) * 1024.0
    assert scaled.value == np.float32(value.value * np.float32(1024.0))
    scaled.backward()
    for key, p in model.named_parameters():
        assert np.array_equal(p.grad, plain[key] * np.float32(1024.0))


# --- a NaN in an input is never turned into a number (PRECISION-030) --------------------------------


NAN_LAYERS = {
    # layer -> (factory, which outputs a NaN at input [1, 2] reaches: "element" or "row")
    "ReLU": (lambda nn: nn.ReLU(), "element"),
    "Tanh": (lambda nn: nn.Tanh(), "element"),
    "GELU": (lambda nn: nn.GELU(), "element"),
    "Dropout": (lambda nn: nn.Dropout(0.5, seed=1), "element"),
    "Linear": (lambda nn: nn.Linear(6, 5), "row"),
    "LayerNorm": (lambda nn: nn.LayerNorm(6), "row"),
}


@pytest.mark.spec("PRECISION-030")
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["nan", "negative-nan"])
@pytest.mark.parametrize("layer", list(NAN_LAYERS))
def test_a_nan_in_the_input_reaches_the_output(engine, layer, sign):
    factory, reach = NAN_LAYERS[layer]
    engine.nn.manual_seed(0)
    module = factory(engine.nn)
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    x[1, 2] = np.copysign(np.nan, sign)  # a NaN's sign bit is no number either
    out = np.asarray(module(x))
    reached = np.zeros(out.shape, bool)
    if reach == "element":
        reached[1, 2] = True
    else:
        reached[1] = True
    assert np.isnan(out[reached]).all(), f"{layer} turned a NaN into {out[reached]}"
    assert np.isfinite(out[~reached]).all()


@pytest.mark.spec("PRECISION-030")
@pytest.mark.parametrize("loss", ["cross_entropy", "mse_loss"])
def test_a_nan_prediction_makes_the_loss_nan(engine, loss):
    engine.nn.manual_seed(0)
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    x[2, 1] = np.nan
    prediction = engine.nn.Linear(5, 4)(x)  # NaN in its last row
    target = np.array([0, 3, 1]) if loss == "cross_entropy" else np.zeros((3, 4), np.float32)
    assert np.isnan(float(getattr(engine.nn, loss)(prediction, target)))
