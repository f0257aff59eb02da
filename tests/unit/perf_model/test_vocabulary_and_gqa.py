"""The large-vocabulary output layer, its loss, and grouped-query attention in the performance model.

Expectations are written by hand from the documents the model cites (the Llama 3 8B model card's
parameter count, the stable softmax cross-entropy's operation count) and from the layer table of
csconform/perf/models/layer.py.
"""

from __future__ import annotations

import pandas as pd
import pytest

from csconform.errors import InvalidInputError
from csconform.perf.calibration.measured_runs import row_model
from csconform.perf.execution.efficiency import Calibration, effective_flops
from csconform.perf.models.kernels import KernelCost
from csconform.perf.models.layer import Layer

LLAMA3_8B_ROW = {
    "id": "llama3",
    "model": "llama3-8b",
    "layers": 32,
    "d_model": 4096,
    "heads": 32,
    "seq_len": 2048,
    "global_batch": 960,
    "systems": 1,
    "system": "CS-3",
    "samples_per_s": 19.47,
    "vocab_size": 128256,
    "ffn": 14336,
    "kv_heads": 8,
}


def test_a_scored_head_adds_the_softmax_cross_entropy_over_its_logits():
    d, vocab, tokens = 64, 1000, 16
    plain = Layer("dense", d, vocab, tokens)
    scored = Layer("dense", d, vocab, tokens, scored=True)
    product = 2 * d * vocab * tokens
    assert (plain.forward_flops, plain.backward_flops) == (product, 2 * product)
    assert plain.loss_forward_flops == plain.loss_backward_flops == 0
    assert scored.loss_forward_flops == 4 * vocab * tokens  # maximum, subtract, exponential, sum: per logit
    assert scored.loss_backward_flops == 2 * vocab * tokens  # normalise and scale: per logit
    assert scored.forward_flops == product + 4 * vocab * tokens
    assert scored.backward_flops == 2 * product + 2 * vocab * tokens  # the products' backward is not doubled loss
    assert scored.params == plain.params  # a loss has no weights


@pytest.mark.parametrize(
    "layer",
    [
        {"kind": "attention", "in_features": 8, "out_features": 8, "heads": 2, "scored": True},
        {"kind": "layer_norm", "in_features": 8, "out_features": 8, "scored": True},
        {"kind": "dense", "in_features": 8, "out_features": 8, "scored": "yes"},
    ],
)
def test_only_a_dense_layer_is_scored(layer):
    with pytest.raises(InvalidInputError, match="scored"):
        Layer(**layer)


def test_the_loss_runs_at_the_efficiency_of_work_without_weights():
    """Halving attention_efficiency adds exactly the loss's FLOPs once more; matmul_efficiency leaves it alone."""
    head = KernelCost("head", (Layer("dense", 64, 1000, 16, scored=True),))
    base = Calibration(matmul_efficiency=0.5, attention_efficiency=0.2, layer_latency_s=0, input_tokens_per_s=1e9)
    forward, backward = effective_flops(head, base)
    slower = effective_flops(head, base.with_values(attention_efficiency=0.1))
    assert slower[0] - forward == pytest.approx(head.loss_forward_flops / 0.2)
    assert slower[1] - backward == pytest.approx(head.loss_backward_flops / 0.2)
    products = effective_flops(head, base.with_values(matmul_efficiency=0.25))
    assert products[0] - forward == pytest.approx((head.forward_flops - head.loss_forward_flops) / 0.5)


def test_the_readers_score_the_heads_and_nothing_else():
    model = row_model(pd.Series(LLAMA3_8B_ROW))
    scored = [layer.name for layer in model.layers if layer.scored]
    assert scored == ["lm_head"]
    bert = row_model(pd.Series({**LLAMA3_8B_ROW, "model": "bert_large", "vocab_size": 30522, "ffn": 4096}))
    assert [layer.name for layer in bert.layers if layer.scored] == ["classifier"]


def test_llama3_8b_has_its_published_parameters_and_narrow_key_value_projections():
    """Meta's model card: 8.03B parameters (8,030,261,248 in the released checkpoint); 8 key/value heads of 128."""
    model = row_model(pd.Series(LLAMA3_8B_ROW))
    assert model.params == 8_030_261_248
    attention = [layer for layer in model.layers if layer.kind == "attention"]
    assert {(a.query_features, a.key_value_features) for a in attention} == {(4096, 1024)}
    assert attention[0].params == 2 * 4096 * 4096 + 2 * 4096 * 1024
    # grouped-query attention: the K and V projections cost a quarter of the queries'
    full = row_model(pd.Series({**LLAMA3_8B_ROW, "kv_heads": 32}))
    assert full.params - model.params == 32 * 2 * 4096 * (4096 - 1024)
    assert full.flops_per_sample - model.flops_per_sample == pytest.approx(32 * 3 * 2 * 2048 * 2 * 4096 * 3072)
    # the 128k-token vocabulary's loss: 6 FLOPs per logit, a small share of the step's FLOPs
    head = next(layer for layer in model.layers if layer.name == "lm_head")
    assert head.loss_forward_flops + head.loss_backward_flops == 6 * 128256 * 2048
