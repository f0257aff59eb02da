"""Cost of emulated mixed precision: one training step in mixed precision versus plain float32.

Mixed precision runs on target cs (operands rounded to float16, float32 accumulation); the FP32
baseline is the same model on target cpu with compute precision float32. The machine is shared, so
the two are measured side by side: every benchmark round times one mixed step and one FP32 step
back to back (alternating which goes first) and stores both timings in the benchmark's
``extra_info``, with the BLAS thread setting (``OPENBLAS_NUM_THREADS``; NumPy's elementwise rounding
is single-threaded, BLAS is not); ``csconform.report.benchmarks`` turns that JSON into
reports/mixed_precision_benchmark.{md,csv}.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
import pytest

from csconform import engine
from csconform.engine import nn, optim, precision

MODES = ("mixed", "fp32")


def fc_mnist_case(rng: np.random.Generator):
    model = nn.fc_mnist()
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    return model, optim.SGD(model.parameters(), lr=0.01, momentum=0.9), x, y, nn.cross_entropy


def transformer_case(rng: np.random.Generator):
    model = nn.TransformerBlock(d_model=128, num_heads=4, causal=True)
    x = rng.standard_normal((8, 64, 128)).astype(np.float32)
    y = rng.standard_normal((8, 64, 128)).astype(np.float32)
    return model, optim.Adam(model.parameters(), lr=1e-3), x, y, nn.mse_loss


CASES: dict[str, Callable] = {
    "fc_mnist_784-500-500-10_b128_sgd": fc_mnist_case,
    "transformer_block_d128_h4_s64_b8_adam": transformer_case,
}


def select_mode(mode: str) -> None:
    """Mixed precision is the cs default; the FP32 baseline needs target cpu."""
    engine.set_target("cs" if mode == "mixed" else "cpu")
    precision.set_compute_precision("mixed" if mode == "mixed" else "float32")


def training_step(model, optimizer, x, y, loss_fn) -> Callable[[], np.float32]:
    def step() -> np.float32:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.value

    return step


@pytest.mark.parametrize("model_name", sorted(CASES))
def test_training_step_mixed_vs_fp32(benchmark, model_name: str) -> None:
    engine.reset()
    steps = {}
    for mode in MODES:
        nn.manual_seed(0)
        select_mode(mode)
        steps[mode] = training_step(*CASES[model_name](np.random.default_rng(0)))
    timings_ms: dict[str, list[float]] = {mode: [] for mode in MODES}
    losses: list[np.float32] = []
    rounds = [0]

    def pair() -> None:
        order = MODES if rounds[0] % 2 == 0 else MODES[::-1]
        rounds[0] += 1
        for mode in order:
            select_mode(mode)
            start = time.perf_counter()
            losses.append(steps[mode]())
            timings_ms[mode].append((time.perf_counter() - start) * 1e3)

    benchmark.group = "mixed precision vs fp32"
    benchmark.pedantic(pair, rounds=30, warmup_rounds=3, iterations=1)
    engine.reset()
    warmup = 3
    benchmark.extra_info.update(
        {
            "model": model_name,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "mixed_ms": timings_ms["mixed"][warmup:],
            "fp32_ms": timings_ms["fp32"][warmup:],
        }
    )
    assert all(np.isfinite(losses))
