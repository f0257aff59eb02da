"""Conformance checks of mixed precision and the 16-bit formats (specs/precision.yaml).

The oracle for rounding is written here, independently of any engine: float16 and bfloat16 use the
NumPy / ml_dtypes casts, and every format is also checked against an exact rational rounding
(``reference_round``) built only from the field widths the spec states.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import InvalidInputError, PrecisionError, UnknownNameError

FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "cbfloat16": (6, 9)}


def reference_round(x: float, exponent_bits: int, mantissa_bits: int) -> float:
    """Round x exactly (rational arithmetic) to nearest-even in an IEEE-style binary format."""
    if math.isnan(x) or math.isinf(x) or x == 0.0:
        return x
    bias = 2 ** (exponent_bits - 1) - 1
    sign = -1.0 if x < 0 else 1.0
    exponent = max(math.frexp(abs(x))[1] - 1, 1 - bias)  # subnormals share the lowest binade's ulp
    ulp = Fraction(2) ** (exponent - mantissa_bits)
    units, remainder = divmod(Fraction(abs(x)) / ulp, 1)
    if remainder > Fraction(1, 2) or (remainder == Fraction(1, 2) and units % 2 == 1):
        units += 1
    rounded = units * ulp
    if rounded > (2 - Fraction(1, 2**mantissa_bits)) * Fraction(2) ** bias:
        return sign * math.inf
    return sign * float(rounded)


def reference_quantize(values: np.ndarray, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float32)
    if name == "float16":
        with np.errstate(over="ignore"):
            return values.astype(np.float16).astype(np.float32)
    if name == "bfloat16":
        return values.astype(ml_dtypes.bfloat16).astype(np.float32)
    flat = [reference_round(float(v), *FORMATS[name]) for v in values.reshape(-1)]
    return np.array(flat, dtype=np.float32).reshape(values.shape)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | both_nan))


def float32_from_bits(bits: list[int]) -> np.ndarray:
    return np.array(bits, dtype=np.uint64).astype(np.uint32).view(np.float32)


def near_boundaries(exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Float32 values around every binade edge, the subnormal range, ties and overflow of a format."""
    bias = 2 ** (exponent_bits - 1) - 1
    exponents = range(1 - bias - mantissa_bits - 2, bias + 2)
    offsets = np.array([0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17], dtype=np.float64) / 16
    grid = [np.ldexp(1.0 + offsets * 2.0**-mantissa_bits, e) for e in exponents]
    top = np.ldexp(2.0 - 2.0 ** -np.arange(mantissa_bits - 1, mantissa_bits + 3, dtype=np.float64), bias)
    with np.errstate(over="ignore"):  # bfloat16's top binade lies beyond float32's range on purpose
        values = np.concatenate(grid + [top]).astype(np.float32)
    return np.concatenate([values, -values])


def small_linear(engine, rng: np.random.Generator, in_features: int = 7, out_features: int = 5):
    layer = engine.nn.Linear(in_features, out_features)
    x = rng.standard_normal((4, in_features)).astype(np.float32)
    return layer, x


# --- the precision mode ---------------------------------------------------------------------------


@pytest.mark.spec("PRECISION-001")
def test_only_mixed_precision_on_cs_float32_accepted_on_cpu(engine):
    for mode in engine.precision.COMPUTE_PRECISIONS:
        if mode != "mixed":
            with pytest.raises(PrecisionError, match="mixed"):
                engine.precision.set_compute_precision(mode)
    assert "float32" in engine.precision.COMPUTE_PRECISIONS
    assert engine.precision.compute_precision() == "mixed"

    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    assert engine.precision.compute_precision() == "float32"
    layer, x = small_linear(engine, np.random.default_rng(1))
    w, b = layer.weight.data, layer.bias.data
    assert np.array_equal(layer(x), x @ w.T + b)  # no rounding at all on cpu in float32


@pytest.mark.spec("PRECISION-001")
def test_mixed_precision_is_accepted_on_cs(engine):
    engine.precision.set_compute_precision("mixed")
    assert engine.precision.compute_precision() == "mixed"
    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    engine.set_target("cs")
    engine.precision.set_compute_precision("mixed")  # back to the one mode the system has
    layer, x = small_linear(engine, np.random.default_rng(11))
    q = lambda a: reference_quantize(a, "float16")  # noqa: E731
    assert np.array_equal(layer(x), q(x) @ q(layer.weight.data).T + q(layer.bias.data))


@pytest.mark.spec("PRECISION-001")
def test_pure_half_training_is_available_on_cpu_only(engine):
    with pytest.raises(PrecisionError):
        engine.precision.set_compute_precision("half")
    engine.set_target("cpu")
    engine.precision.set_compute_precision("half")
    parameter = engine.nn.Parameter(np.array([1.0], dtype=np.float32))
    parameter.grad = np.array([1.0], dtype=np.float32)
    engine.optim.SGD([parameter], lr=1e-5).step()
    assert parameter.data[0] == np.float32(1.0)  # stored in float16: the small update is lost


def mixed_float16(engine):
    """Mixed precision with float16 operands, asked for explicitly (the default only on cs: PRECISION-020)."""
    engine.precision.set_half_dtype("float16")
    engine.precision.set_compute_precision("mixed")


@pytest.mark.spec("PRECISION-020")
def test_mixed_precision_float16_is_the_default_on_cs(engine):
    assert engine.current_target() == "cs"
    assert engine.precision.compute_precision() == "mixed"
    assert engine.precision.half_dtype_name() == "float16"
    layer, x = small_linear(engine, np.random.default_rng(2))
    q = lambda a: reference_quantize(a, "float16")  # noqa: E731
    expected = q(x) @ q(layer.weight.data).T + q(layer.bias.data)
    assert np.array_equal(layer(x), expected)
    assert not np.array_equal(layer(x), x @ layer.weight.data.T + layer.bias.data)


@pytest.mark.spec("PRECISION-021")
def test_float16_is_the_default_half_dtype_on_every_target(engine):
    assert engine.precision.half_dtype_name() == "float16"
    engine.set_target("cpu")
    assert engine.precision.half_dtype_name() == "float16"
    engine.precision.set_half_dtype("bfloat16")
    engine.reset()
    assert engine.precision.half_dtype_name() == "float16"


@pytest.mark.spec("PRECISION-003")
def test_master_weights_stay_float32(engine):
    rng = np.random.default_rng(3)
    parameter = engine.nn.Parameter(np.array([0.1, 0.2, 0.3], dtype=np.float16))
    assert parameter.data.dtype == np.float32

    model = engine.nn.Sequential(engine.nn.Linear(6, 8), engine.nn.ReLU(), engine.nn.Linear(8, 3))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.0123)
    x, y = rng.standard_normal((16, 6)), rng.integers(0, 3, 16)
    for _ in range(3):
        optimizer.zero_grad()
        engine.nn.cross_entropy(model(x), y).backward()
        optimizer.step()
    for parameter in model.parameters():
        assert parameter.data.dtype == np.float32
    weights = np.concatenate([p.data.ravel() for p in model.parameters()])
    assert not np.array_equal(weights, reference_quantize(weights, "float16"))


@pytest.mark.spec("PRECISION-004")
@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@given(seed=st.integers(0, 2**32 - 1), batch=st.integers(1, 9), features=st.integers(1, 12))
@settings(max_examples=20)
def test_linear_forward_is_float32_product_of_rounded_operands(engine, half, seed, batch, features):
    engine.reset()
    engine.precision.set_half_dtype(half)
    engine.precision.set_compute_precision("mixed")
    rng = np.random.default_rng(seed)
    layer = engine.nn.Linear(features, 3)
    x = (rng.standard_normal((batch, features)) * 10).astype(np.float32)
    q = lambda a: reference_quantize(a, half)  # noqa: E731
    out = layer(x)
    assert out.dtype == np.float32
    assert np.array_equal(out, q(x) @ q(layer.weight.data).T + q(layer.bias.data))


@pytest.mark.spec("PRECISION-005")
def test_casts_are_inserted_by_the_engine_forward_and_backward(engine):
    mixed_float16(engine)
    rng = np.random.default_rng(5)
    layer, x = small_linear(engine, rng)
    q = lambda a: reference_quantize(a, "float16")  # noqa: E731
    assert np.array_equal(layer(x), layer(q(x)))
    assert np.array_equal(layer(x.astype(np.float64)), layer(x))

    grad_out = rng.standard_normal((4, 5)).astype(np.float32)
    layer(x)
    grad_in = layer.backward(grad_out)
    assert np.array_equal(layer.weight.grad, q(grad_out).T @ q(x))
    assert np.array_equal(grad_in, q(grad_out) @ q(layer.weight.data))
    assert layer.weight.grad.dtype == np.float32


@pytest.mark.spec("PRECISION-005", "PRECISION-018")
def test_float64_data_is_computed_in_float32_on_cpu_too(engine):
    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    rng = np.random.default_rng(12)
    layer, x = small_linear(engine, rng)
    grad_out = rng.standard_normal((4, 5))  # float64, as a user's NumPy code makes it
    y32 = layer(x)
    grad_in32 = layer.backward(grad_out.astype(np.float32))
    weight_grad32 = layer.weight.grad.copy()
    layer.zero_grad()
    y64 = layer(x.astype(np.float64))
    grad_in64 = layer.backward(grad_out)
    for from_float64, from_float32 in ((y64, y32), (grad_in64, grad_in32), (layer.weight.grad, weight_grad32)):
        assert from_float64.dtype == np.float32
        assert np.array_equal(from_float64, from_float32)


@pytest.mark.spec("PRECISION-006")
def test_weight_update_runs_in_float32(engine):
    parameter = engine.nn.Parameter(np.array([1.0, -3.0], dtype=np.float32))
    parameter.grad = np.array([1.0, 0.5], dtype=np.float32)
    optimizer = engine.optim.SGD([parameter], lr=1e-5)
    optimizer.step()
    expected = np.array([1.0, -3.0], np.float32) - np.float32(1e-5) * np.array([1.0, 0.5], np.float32)
    assert parameter.data.dtype == np.float32
    assert np.array_equal(parameter.data, expected)
    assert not np.array_equal(parameter.data, reference_quantize(parameter.data, "float16"))


@pytest.mark.spec("PRECISION-007")
def test_no_other_precision_mode_reaches_the_cs_system(engine):
    layer, x = small_linear(engine, np.random.default_rng(7))
    engine.set_target("cpu")
    engine.precision.set_compute_precision("float32")
    layer(x)  # fine on cpu
    engine.set_target("cs")
    with pytest.raises(PrecisionError, match="mixed"):
        layer(x)
    parameter = engine.nn.Parameter(np.ones(2))
    parameter.grad = np.ones(2)
    with pytest.raises(PrecisionError, match="mixed"):
        engine.optim.SGD([parameter], lr=0.1).step()
    assert np.array_equal(parameter.data, np.ones(2, np.float32))
    for target in ("cs", "cpu"):
        engine.set_target(target)
        with pytest.raises(UnknownNameError, match="mixed"):
            engine.precision.set_compute_precision("double")


# --- the half dtype ------------------------------------------------------------------------------


@pytest.mark.spec("PRECISION-008")
@pytest.mark.parametrize(
    "value, name, dtype",
    [
        ("float16", "float16", np.dtype(np.float16)),
        ("bfloat16", "bfloat16", np.dtype(ml_dtypes.bfloat16)),
        (np.float16, "float16", np.dtype(np.float16)),
        (np.dtype(ml_dtypes.bfloat16), "bfloat16", np.dtype(ml_dtypes.bfloat16)),
    ],
)
def test_set_half_dtype_accepts_names_and_dtypes(engine, value, name, dtype):
    if name == "float16":
        engine.precision.set_half_dtype("bfloat16")  # start elsewhere so the change is visible
    assert engine.precision.set_half_dtype(value) == dtype
    assert engine.precision.half_dtype_name() == name


@pytest.mark.spec("PRECISION-009")
def test_cbfloat16_is_a_proxy_dtype(engine):
    proxy = engine.precision.set_half_dtype("cbfloat16")
    assert not isinstance(proxy, np.dtype)
    assert proxy.name == "cbfloat16" and proxy.itemsize == 2
    assert engine.precision.half_dtype_name() == "cbfloat16"
    engine.precision.set_half_dtype("float16")
    assert engine.precision.set_half_dtype(proxy) == proxy
    assert engine.precision.half_dtype_name() == "cbfloat16"
    layer, x = small_linear(engine, np.random.default_rng(9))
    q = lambda a: reference_quantize(a, "cbfloat16")  # noqa: E731
    assert np.array_equal(layer(x), q(x) @ q(layer.weight.data).T + q(layer.bias.data))


@pytest.mark.spec("PRECISION-010")
def test_half_dtype_selects_the_operand_rounding(engine):
    rng = np.random.default_rng(10)
    layer, x = small_linear(engine, rng)
    x = x * np.float32(1000.0)
    outputs = {}
    for name in FORMATS:
        engine.precision.set_half_dtype(name)
        q = lambda a, name=name: reference_quantize(a, name)  # noqa: E731
        outputs[name] = layer(x)
        assert np.array_equal(outputs[name], q(x) @ q(layer.weight.data).T + q(layer.bias.data))
    assert not np.array_equal(outputs["float16"], outputs["bfloat16"])
    assert not np.array_equal(outputs["float16"], outputs["cbfloat16"])
    assert not np.array_equal(outputs["bfloat16"], outputs["cbfloat16"])


@pytest.mark.spec("PRECISION-011")
@pytest.mark.parametrize("value", ["float32", "fp8", np.float32, np.float64, 16])
def test_unknown_half_dtype_is_refused(engine, value):
    engine.precision.set_half_dtype("bfloat16")
    with pytest.raises(UnknownNameError) as raised:
        engine.precision.set_half_dtype(value)
    for name in FORMATS:
        assert name in str(raised.value)
    assert engine.precision.half_dtype_name() == "bfloat16"


# --- the formats ---------------------------------------------------------------------------------

FLOAT32_BITS = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64)


@pytest.mark.spec("PRECISION-012")
def test_float16_is_ieee_binary16(engine):
    quantize = engine.precision.quantize
    specials = np.array([65504, 65519.99, 65520, 2.0**-14, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25], np.float32)
    expected = np.array([65504, 65504, np.inf, 2.0**-14, 2.0**-24, 0.0, 2.0**-24], np.float32)
    assert same_bits(quantize(specials, "float16"), expected)
    ties = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11], np.float32)  # halfway: to the even neighbour
    assert same_bits(quantize(ties, "float16"), np.array([1.0, 1 + 2.0**-9], np.float32))
    boundaries = near_boundaries(*FORMATS["float16"])
    assert same_bits(quantize(boundaries, "float16"), reference_quantize(boundaries, "float16"))
    exact = np.array([reference_round(float(v), 5, 10) for v in boundaries], np.float32)
    assert same_bits(quantize(boundaries, "float16"), exact)


@pytest.mark.spec("PRECISION-013")
def test_bfloat16_has_float32_range_and_7_mantissa_bits(engine):
    quantize = engine.precision.quantize
    boundaries = near_boundaries(*FORMATS["bfloat16"])
    exact = np.array([reference_round(float(v), 8, 7) for v in boundaries], np.float32)
    assert same_bits(quantize(boundaries, "bfloat16"), exact)
    largest = np.float32((2 - 2.0**-7) * 2.0**127)
    assert quantize(np.array([largest]), "bfloat16")[0] == largest
    assert quantize(np.array([np.finfo(np.float32).max]), "bfloat16")[0] == np.inf
    assert quantize(np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8], np.float32), "bfloat16").tolist() == [1.0, 1 + 2.0**-6]


@pytest.mark.spec("PRECISION-014")
def test_cbfloat16_fields_and_stated_assumptions(engine):
    quantize = engine.precision.quantize
    largest = (2 - 2.0**-9) * 2.0**31
    specials = np.array(
        [
            largest,
            largest + 2.0**21 - 2.0**8,
            largest + 2.0**21,
            2.0**-30,
            2.0**-39,
            2.0**-40,
            1.5 * 2.0**-40,
            3 * 2.0**-40,
            1 + 2.0**-10,
            1 + 3 * 2.0**-10,
            70000.0,
            np.nan,
        ],
        np.float32,
    )
    expected = np.array(
        [largest, largest, np.inf, 2.0**-30, 2.0**-39, 0.0, 2.0**-39, 2.0**-38, 1.0, 1 + 2.0**-8, 70016.0, np.nan],
        np.float32,
    )
    assert same_bits(quantize(specials, "cbfloat16"), expected)
    boundaries = near_boundaries(*FORMATS["cbfloat16"])
    assert same_bits(quantize(boundaries, "cbfloat16"), reference_quantize(boundaries, "cbfloat16"))


@pytest.mark.spec("PRECISION-012", "PRECISION-013", "PRECISION-014")
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_float32_beyond_the_range_overflows_to_inf(engine, name):
    exponent_bits, mantissa_bits = FORMATS[name]
    bias = 2 ** (exponent_bits - 1) - 1
    overflow = (2 - 2.0 ** -(mantissa_bits + 1)) * 2.0**bias  # the largest finite value plus half an ulp
    exponents = np.arange(-149, 128)
    with np.errstate(over="ignore"):
        candidates = np.concatenate(
            [np.ldexp(1.0, exponents), np.ldexp(1.5, exponents), np.ldexp(2.0 - 2.0**-23, exponents)]
        ).astype(np.float32)
    beyond = np.append(candidates[np.isfinite(candidates) & (candidates >= overflow)], np.finfo(np.float32).max)
    assert beyond.size > 0
    for sign in (1, -1):
        rounded = engine.precision.quantize(sign * beyond, name)
        assert np.all(rounded == sign * np.inf), beyond[rounded != sign * np.inf]


@pytest.mark.spec("PRECISION-012", "PRECISION-013", "PRECISION-014")
@pytest.mark.parametrize("name", sorted(FORMATS))  # one test per format: each is observable on its own
@given(bits=FLOAT32_BITS)
def test_quantize_matches_exact_rounding_on_any_float32(engine, name, bits):
    values = float32_from_bits(bits)
    assert same_bits(engine.precision.quantize(values, name), reference_quantize(values, name))


@pytest.mark.spec("PRECISION-015")
@pytest.mark.parametrize("name", sorted(FORMATS))  # one test per format: each is observable on its own
@given(bits=FLOAT32_BITS)
def test_quantize_is_idempotent_monotone_symmetric(engine, name, bits):
    quantize = engine.precision.quantize
    values = float32_from_bits(bits)
    once = quantize(values, name)
    assert once.dtype == np.float32 and once.shape == values.shape
    assert same_bits(quantize(once, name), once)
    assert same_bits(quantize(-values, name), -once)
    assert np.array_equal(np.isnan(once), np.isnan(values))
    infinite = np.isinf(values)
    assert np.array_equal(once[infinite], values[infinite])
    finite = values[np.isfinite(values)]
    ordered = np.sort(finite)
    rounded = quantize(ordered, name)
    assert np.all(rounded[1:] >= rounded[:-1])


@pytest.mark.spec("PRECISION-016")
def test_quantize_refuses_bad_input(engine):
    with pytest.raises(UnknownNameError) as raised:
        engine.precision.quantize(np.ones(3), "float8")
    assert all(name in str(raised.value) for name in FORMATS)
    for bad in (["a", "b"], np.array(["1.0"]), {"x": 1}, object()):
        with pytest.raises(InvalidInputError):
            engine.precision.quantize(bad, "float16")


@pytest.mark.spec("PRECISION-016", "PRECISION-012")
def test_quantize_accepts_any_real_numeric_input(engine):
    values = np.array([[1.0, 65519.0], [-3.0, 2.0**-24]], dtype=np.float32)
    expected = reference_quantize(values, "float16")
    for numeric in (values.astype(np.float64), np.asfortranarray(values), np.repeat(values, 2, axis=1)[:, ::2]):
        rounded = engine.precision.quantize(numeric, "float16")
        assert rounded.dtype == np.float32 and rounded.shape == values.shape
        assert same_bits(rounded, expected)
    integers = np.array([3, -70000, 2049], dtype=np.int64)  # 2049 is a tie between 2048 and 2050
    assert engine.precision.quantize(integers, "float16").tolist() == [3.0, -np.inf, 2048.0]
    assert engine.precision.quantize(np.array([1e300, -1e300]), "float16").tolist() == [np.inf, -np.inf]


# --- training ------------------------------------------------------------------------------------


@pytest.mark.spec("PRECISION-017")
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_mixed_precision_training_lowers_the_loss(engine, name):
    engine.precision.set_half_dtype(name)
    rng = np.random.default_rng(17)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    y = (x[:, :3] @ rng.standard_normal((3, 3))).argmax(axis=1)
    model = engine.nn.Sequential(engine.nn.Linear(10, 32), engine.nn.Tanh(), engine.nn.Linear(32, 3))
    optimizer = engine.optim.SGD(model.parameters(), lr=0.2, momentum=0.5)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = engine.nn.cross_entropy(model(x), y)
        losses.append(float(loss.value))
        loss.backward()
        optimizer.step()
    assert losses[-1] < 0.5 * losses[0]
    assert all(p.data.dtype == np.float32 for p in model.parameters())
