"""Each key of a Model Zoo ``model:`` section: its default, its effect on the count, its refusal.

A small section of each model class, one key changed at a time; each expected difference is the
parameters the key adds or removes, written out from the architecture it describes (d = 64 wide,
2 blocks, 4 heads, an MLP 256 wide, 100 tokens, 32 positions). The zoo's defaults make GPT-2 small,
whose count transformers gives (``data/hf_configs/transformers_counts.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from model_refusals import assert_refused, refusal
from small_zoo_section import BLOCKS, FFN, HEADS, POSITIONS, SIZES, VOCAB, D

from csconform.errors import CsConformError, ModelConfigError, UnknownNameError, UnsupportedModelError
from csconform.perf.models.fields import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH
from csconform.perf.models.zoo_section import ZOO_FAMILIES, model_from_zoo_section

HF = json.loads((Path(__file__).parent / "data" / "hf_configs" / "transformers_counts.json").read_text())["counts"]
GPT2 = {"name": "gpt2", **SIZES}
NORMS = 2 * BLOCKS + 1  # two per block and the final one
MLP = D * FFN + FFN + FFN * D + D
TIED = "head: the LM head (tied to the token embedding)"


def params(**change) -> int:
    return model_from_zoo_section({**GPT2, **change}).params


def test_an_empty_gpt2_section_is_gpt2_small_and_says_which_defaults_it_took():
    model = model_from_zoo_section({"name": "gpt2"}, source="params.yaml: model")
    assert model.params == HF["gpt2"]["GPT2LMHeadModel"]["params"] == 124_439_808
    assert model.seq_len == model.max_seq_len == 1024
    assert model.notes == (
        "hidden_size absent: the Model Zoo's default 768",
        "num_hidden_layers absent: the Model Zoo's default 12",
        "num_heads absent: the Model Zoo's default 12",
        "vocab_size absent: the Model Zoo's default 50257",
        "max_position_embeddings absent: the Model Zoo's default 1024",
        "filter_size absent: the Model Zoo's default 3072",
        TIED,
    )
    assert (model.name, model.family, model.source) == ("gpt2", "gpt2", "Model Zoo model section (params.yaml: model)")
    assert model.published_params == float(model.params) and model.default_batch == 256


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({"use_projection_bias_in_attention": False}, -BLOCKS * 3 * D),
        ({"use_ffn_bias_in_attention": False}, -BLOCKS * D),
        ({"use_ffn_bias": False}, -BLOCKS * (FFN + D)),
        ({"share_embedding_weights": False}, VOCAB * D),
        ({"use_bias_in_output": True}, VOCAB),
        ({"embedding_layer_norm": True}, 2 * D),
        ({"position_embedding_offset": 3}, 3 * D),
        ({"position_embedding_type": "rotary"}, -POSITIONS * D),
        ({"position_embedding_type": "ROTARY"}, -POSITIONS * D),
        ({"position_embedding_type": "fixed"}, -POSITIONS * D),
        ({"position_embedding_type": None}, -POSITIONS * D),
        ({"position_embedding_type": "relative"}, -POSITIONS * D + 32 * HEADS),
        ({"position_embedding_type": "relative", "num_relative_attention_buckets": 8}, -POSITIONS * D + 8 * HEADS),
        ({"position_embedding_type": "alibi"}, -POSITIONS * D),
        ({"position_embedding_type": "alibi", "alibi_trainable_slopes": True}, -POSITIONS * D + HEADS),
        ({"use_position_embedding": False}, -POSITIONS * D),
        ({"norm_type": "rmsnorm"}, -NORMS * D),
        ({"norm_type": "RMSNorm"}, -NORMS * D),
        ({"norm_type": "biasless-layernorm"}, -NORMS * D),
        ({"use_rms_norm": True}, -NORMS * D),
        ({"use_biasless_norm": True}, -NORMS * D),
        ({"nonlinearity": "swiglu"}, BLOCKS * (D * FFN + FFN)),
        ({"nonlinearity": "GEGLU"}, BLOCKS * (D * FFN + FFN)),
        ({"nonlinearity": "relu"}, 0),
        ({"attention_inner_dim": 128}, BLOCKS * (4 * D * 64 + 3 * 64)),
        (
            {"attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 1}},
            -BLOCKS * 2 * (D * 48 + 48),
        ),
        ({"attention_qk_norm_layer": "layernorm"}, BLOCKS * 2 * 2 * (D // HEADS)),
        ({"moe": {"num_experts": 4, "top_k": 2}}, BLOCKS * (3 * MLP + D * 4)),
        ({"moe_params": {"num_experts": 4, "top_k": 2}}, BLOCKS * (3 * MLP + D * 4)),
        ({"moe": {"num_experts": 4, "router_use_bias": True}}, BLOCKS * (3 * MLP + D * 4 + 4)),
        ({"moe": {"num_experts": 1}}, 0),
        ({"moe": {"num_experts": 2, "num_shared_experts": 1}}, BLOCKS * (2 * MLP + D * 2)),
        ({"cross_attention_layers": []}, 0),
        ({"norm_first_sandwich": False}, 0),
        ({"norm_first_sandwich": True}, BLOCKS * 2 * 2 * D),  # a LayerNorm after attention and after the MLP
        ({"num_extra_input_vocab_tokens": 0}, 0),
    ],
)
def test_each_decoder_key_adds_or_removes_what_it_describes(change, difference):
    assert params(**change) - params() == difference


@pytest.mark.parametrize(
    ("change", "active"),
    [
        ({"moe": {"num_experts": 4, "top_k": 2}}, BLOCKS * (1 * MLP + D * 4)),
        ({"moe": {"num_experts": 4}}, BLOCKS * D * 4),  # top_k defaults to 1
        ({"moe": {"num_experts": 2, "num_shared_experts": 1}}, BLOCKS * (1 * MLP + D * 2)),
    ],
)
def test_a_mixture_is_active_in_top_k_experts_and_the_shared_ones(change, active):
    model = model_from_zoo_section({**GPT2, **change})
    assert model.active_params - params() == active


def test_the_gptj_class_has_one_norm_and_no_mlp_bias_unless_told():
    gptj = {**GPT2, "name": "gptj"}
    one = model_from_zoo_section(gptj).params
    assert model_from_zoo_section({**gptj, "use_untied_layer_norm": True}).params - one == BLOCKS * 2 * D
    assert model_from_zoo_section({**gptj, "use_ffn_bias": True}).params - one == BLOCKS * (FFN + D)
    # rotary positions by default: no table
    assert one == params() - POSITIONS * D - BLOCKS * 2 * D - BLOCKS * (FFN + D)


@pytest.mark.parametrize(
    ("change", "windows", "where"),
    [
        ({}, [8, 8, 8, 8], "every block"),
        ({"sliding_window_every_other_decoder_layer": True}, [0, 8, 0, 8], "every other block"),
        (
            {
                "sliding_window_every_other_decoder_layer": True,
                "sliding_window_every_other_decoder_layer_pattern": "sliding_window_first",
            },
            [8, 0, 8, 0],
            "every other block",
        ),
        # attention sinks: every query of a window also attends to the first tokens (Gemma 2's 4k-window file)
        ({"attention_sink_tokens": 2}, [10, 10, 10, 10], "every block"),
    ],
)
def test_a_sliding_window_applies_to_the_blocks_the_pattern_names(change, windows, where):
    section = {**GPT2, "num_hidden_layers": 4, "attention_sliding_window_length": 8, **change}
    model = model_from_zoo_section(section)
    assert [layer.window for layer in model.layers if layer.kind == "attention"] == windows
    sinks = " and the first 2 tokens (attention sinks)" if "attention_sink_tokens" in change else ""
    assert f"sliding-window attention: each query attends to at most 8 keys{sinks} in {where}" in model.notes


# (change, the error, its key, what its message names; the wording is pinned in test_model_reader_messages.py)
REFUSED = [
    ({"name": 3}, ModelConfigError, "name", ("name", "3")),
    ({"name": None}, ModelConfigError, "name", ("name", *ZOO_FAMILIES)),
    ({"attention_inner_dim": 66}, ModelConfigError, "num_heads", ("attention_inner_dim", "66", "num_heads", "4")),
    (
        {"attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 3}},
        ModelConfigError,
        "extra_attention_params.num_kv_groups",
        ("extra_attention_params.num_kv_groups", "3", "num_heads", "4"),
    ),
    (
        {"attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 8}},
        ModelConfigError,
        "extra_attention_params.num_kv_groups",
        ("extra_attention_params.num_kv_groups", "8", "num_heads", "4"),
    ),
    (
        {"attention_module": "multiquery_attention"},
        ModelConfigError,
        "extra_attention_params.num_kv_groups",
        ("extra_attention_params.num_kv_groups", "number of key/value groups"),
    ),
    (
        {"attention_module": "flash"},
        ModelConfigError,
        "attention_module",
        ("attention_module", "aiayn_attention", "multiquery_attention", "'flash'"),
    ),
    (
        {
            "attention_sliding_window_length": 8,
            "sliding_window_every_other_decoder_layer": True,
            "sliding_window_every_other_decoder_layer_pattern": "odd",
        },
        ModelConfigError,
        "sliding_window_every_other_decoder_layer_pattern",
        ("sliding_window_every_other_decoder_layer_pattern", "full_attention_first", "sliding_window_first", "'odd'"),
    ),
    (
        {"norm_type": "batchnorm"},
        UnsupportedModelError,
        "norm_type",
        ("norm_type", "'batchnorm'", "layernorm", "rmsnorm", "biasless-layernorm"),
    ),
    (
        {"position_embedding_type": "sinusoid"},
        ModelConfigError,
        "position_embedding_type",
        ("position_embedding_type", "learned", "fixed", "relative", "rotary", "alibi", "null", "'sinusoid'"),
    ),
    (
        {"cross_attention_layers": [1]},
        UnsupportedModelError,
        "cross_attention_layers",
        ("cross_attention_layers", "[1]", "cross-attention layers"),
    ),
    (
        {"name": "gptj", "norm_first_sandwich": True},
        UnsupportedModelError,
        "norm_first_sandwich",
        ("norm_first_sandwich", "True", "sandwich norms outside the GPT-2 class"),
    ),
    ({"name": "dpo"}, UnsupportedModelError, "name", ("'dpo'", "policy_model", "frozen")),
    ({"freeze": ["^transformer_decoder"]}, UnsupportedModelError, "freeze", ("freeze", "frozen layers")),
    ({"attention_sink_tokens": 4}, ModelConfigError, "attention_sink_tokens", ("attention_sliding_window_length",)),
    (
        {"num_extra_input_vocab_tokens": 5},
        UnsupportedModelError,
        "num_extra_input_vocab_tokens",
        ("num_extra_input_vocab_tokens", "5", "extra input vocabulary tokens"),
    ),
    (
        {"attention_qk_norm_layer": "rmsnorm"},
        UnsupportedModelError,
        "attention_qk_norm_layer",
        ("attention_qk_norm_layer", "QK norm"),
    ),
    (
        {"moe": {"num_experts": 2, "top_k": 3}},
        ModelConfigError,
        "moe.top_k",
        ("moe.top_k", "3", "moe.num_experts", "2"),
    ),
    (
        {"hidden_size": MAX_WIDTH + 1},
        ModelConfigError,
        "hidden_size",
        ("hidden_size", "model width", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    (
        {"num_hidden_layers": MAX_LAYERS + 1},
        ModelConfigError,
        "num_hidden_layers",
        ("num_hidden_layers", "number of layers", f"1..{MAX_LAYERS}", str(MAX_LAYERS + 1)),
    ),
    (
        {"num_heads": MAX_WIDTH + 1},
        ModelConfigError,
        "num_heads",
        ("num_heads", "number of attention heads", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    (
        {"vocab_size": 2**24 + 1},
        ModelConfigError,
        "vocab_size",
        ("vocab_size", "vocabulary size", f"1..{2**24}", str(2**24 + 1)),
    ),
    (
        {"max_position_embeddings": MAX_SEQUENCE + 1},
        ModelConfigError,
        "max_position_embeddings",
        ("max_position_embeddings", "maximum sequence length", f"1..{MAX_SEQUENCE}", str(MAX_SEQUENCE + 1)),
    ),
    (
        {"filter_size": 4 * MAX_WIDTH + 1},
        ModelConfigError,
        "filter_size",
        ("filter_size", "MLP width", f"1..{4 * MAX_WIDTH}", str(4 * MAX_WIDTH + 1)),
    ),
    (
        {"attention_inner_dim": MAX_WIDTH + 1},
        ModelConfigError,
        "attention_inner_dim",
        ("attention_inner_dim", "attention width", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    (
        {"attention_sliding_window_length": MAX_SEQUENCE + 1},
        ModelConfigError,
        "attention_sliding_window_length",
        ("attention_sliding_window_length", "sliding window", f"0..{MAX_SEQUENCE}", str(MAX_SEQUENCE + 1)),
    ),
    (
        {"moe": {"num_experts": 2**16 + 1}},
        ModelConfigError,
        "moe.num_experts",
        ("moe.num_experts", "number of experts", f"0..{2**16}", str(2**16 + 1)),
    ),
    (
        {"position_embedding_offset": -1},
        ModelConfigError,
        "position_embedding_offset",
        ("position_embedding_offset", "position embedding offset", f"0..{2**24}", "-1"),
    ),
]


@pytest.mark.parametrize(("change", "kind", "key", "words"), REFUSED)
def test_a_wrong_key_is_refused_saying_which_and_why(change, kind, key, words):
    error = refusal(model_from_zoo_section, {**GPT2, **change}, source="params.yaml: model")
    assert_refused(error, kind, key, *words, source="params.yaml: model")


def test_an_unknown_zoo_model_is_refused_listing_the_known_ones():
    error = refusal(model_from_zoo_section, {**GPT2, "name": "mamba"}, source="params.yaml: model")
    assert_refused(error, UnknownNameError, None, "'mamba'", *ZOO_FAMILIES, source="params.yaml: model")


@pytest.mark.parametrize(("seq_len", "shown"), [(0, "0"), (33, "33"), (True, "True"), (2.0, "2.0")])
def test_a_sequence_length_out_of_the_section_s_range_is_refused(seq_len, shown):
    error = refusal(model_from_zoo_section, GPT2, seq_len=seq_len)
    assert_refused(error, ModelConfigError, None, "seq_len", "max_position_embeddings", "32", shown)


def test_fc_mnist_widths_and_bias():
    by_depth = model_from_zoo_section({"name": "fc_mnist", "depth": 2, "hidden_size": 20})
    listed = model_from_zoo_section({"name": "fc_mnist", "hidden_sizes": [20, 20]})
    assert by_depth.layers == listed.layers and by_depth.params == 784 * 20 + 20 + 20 * 20 + 20 + 20 * 10 + 10
    unbiased = model_from_zoo_section({"name": "fc_mnist", "hidden_sizes": [20, 20], "use_bias": False})
    assert unbiased.params == listed.params - (20 + 20 + 10) and by_depth.seq_len is None
    sequence = refusal(model_from_zoo_section, {"name": "fc_mnist", "hidden_sizes": [20]}, seq_len=8)
    assert_refused(sequence, ModelConfigError, None, "fc_mnist", "sequence length")
    depth = refusal(model_from_zoo_section, {"name": "fc_mnist", "hidden_size": 20})
    assert_refused(depth, ModelConfigError, "depth", "depth")


BERT = SIZES  # named by each test: "bert", "bert/qa", ...


@pytest.mark.parametrize(
    ("name", "change", "note", "heads"),
    [
        (
            "bert/classifier",
            {"num_labels": 3},
            "heads counted: the pooler and a classifier over 3 labels",
            (D * D + D) + (D * 3 + 3),
        ),
        (
            "bert/token_classifier",
            {"num_classes": 5},
            "heads counted: a classifier over 5 classes at every token; no pooler",
            D * 5 + 5,
        ),
        ("bert/qa", {}, "heads counted: a start/end classifier (2 outputs) at every token; no pooler", D * 2 + 2),
        (
            "bert/extractive_summarization",
            {},
            "heads counted: a classifier over 2 labels (its FLOPs counted at every token, an upper bound for the "
            "sentence tokens it reads); no pooler",
            D * 2 + 2,
        ),
        (
            "bert/extractive_summarization",
            {"use_cls_bias": False, "num_labels": 1},
            "heads counted: a classifier over 1 labels (its FLOPs counted at every token, an upper bound for the "
            "sentence tokens it reads); no pooler",
            D * 1,
        ),
    ],
)
def test_bert_fine_tuning_heads_count_the_head_their_name_says(name, change, note, heads):
    body = model_from_zoo_section({**BERT, "name": "bert/qa"}).params - (D * 2 + 2)
    model = model_from_zoo_section({**BERT, "name": name, **change})
    assert model.params - body == heads and note in model.notes


def test_bert_pre_training_keys():
    bert = {**BERT, "name": "bert"}
    base = model_from_zoo_section(bert)
    assert base.notes[-1] == (
        "heads counted: the pooler, next-sentence prediction and the masked-LM head (transform, LayerNorm, decoder)"
    )
    difference = lambda **change: model_from_zoo_section({**bert, **change}).params - base.params  # noqa: E731
    assert difference(num_classes=3) == D + 1  # one more NSP class
    assert difference(use_final_layer_norm=True) == 2 * D
    assert difference(embedding_layer_norm=False) == -2 * D
    assert difference(use_ffn_bias_in_mlm=False) == -D
    assert difference(use_output_bias_in_mlm=False) == -VOCAB
    assert difference(share_embedding_weights=False) == VOCAB * D
    assert difference(mask_padding_in_positional_embed=True, pad_token_id=1) == D
    assert difference(mask_padding_in_positional_embed=True) == 0  # pad_token_id 0: no extra row
    assert difference(num_segments=3) == D
    nsp_off = model_from_zoo_section({**bert, "disable_nsp": True})
    assert nsp_off.notes[-1] == (
        "heads counted: the masked-LM head (transform, LayerNorm, decoder); no pooler, no NSP (disable_nsp)"
    )
    assert base.params - nsp_off.params == (D * D + D) + (D * 2 + 2) + 2 * D  # pooler, NSP, the 2 segment rows
    first = model_from_zoo_section({**bert, "num_segments": 3}, release="1.9")
    assert first.params == base.params
    assert "num_segments is not read by the 1.x pre-training model: 2 segment embeddings" in first.notes
    assert first.at_seq_len(16).params == base.params  # the rebuilt model keeps the release's reading
    error = refusal(model_from_zoo_section, {k: v for k, v in bert.items() if k != "max_position_embeddings"})
    assert_refused(error, ModelConfigError, "max_position_embeddings", "max_position_embeddings")


@pytest.mark.parametrize("moe", [{"num_experts": 1}, {"num_shared_experts": 1}, {"num_experts": 0}])
def test_one_expert_in_all_is_a_dense_mlp_without_a_router(moe):
    """A mixture needs two experts (routed and shared together); one is the plain MLP."""
    model = model_from_zoo_section({**GPT2, "moe": moe})
    assert model.layers == model_from_zoo_section(GPT2).layers
    assert not any(layer.name.endswith(".router") for layer in model.layers)


@pytest.mark.parametrize(
    "moe",
    [
        {"num_experts": 2, "top_k": 2},
        {"num_experts": 2, "num_shared_experts": 0},
        {"num_experts": 2**16, "top_k": 2**16, "num_shared_experts": 2**16},
    ],
)
def test_mixture_sizes_at_their_limits_are_read(moe):
    """top_k may equal num_experts; no shared expert is allowed; each count may reach 2**16."""
    model = model_from_zoo_section({**GPT2, "moe": moe})
    routers = [layer for layer in model.layers if layer.name.endswith(".router")]
    assert len(routers) == BLOCKS and routers[0].out_features == moe["num_experts"]


@pytest.mark.parametrize(
    ("moe", "key", "words"),
    [
        (
            {"num_experts": 2, "num_shared_experts": 2**16 + 1},
            "moe.num_shared_experts",
            ("number of shared experts", f"0..{2**16}", str(2**16 + 1)),
        ),
        ({"num_experts": 2, "num_shared_experts": -1}, "moe.num_shared_experts", (f"0..{2**16}", "-1")),
        ({"num_experts": 2, "top_k": 2**16 + 1}, "moe.top_k", ("experts per token", f"1..{2**16}", str(2**16 + 1))),
    ],
)
def test_mixture_sizes_beyond_their_limits_are_refused(moe, key, words):
    error = refusal(model_from_zoo_section, {**GPT2, "moe": moe})
    assert_refused(error, ModelConfigError, key, key, *words)


@pytest.mark.parametrize(
    ("norm_type", "difference"),
    [("rmsnorm", -(2 * BLOCKS + 1) * D), ("biasless-layernorm", -(2 * BLOCKS + 1) * D)],
)
def test_a_bert_section_s_norm_type_reaches_the_encoder_s_norms(norm_type, difference):
    """Without shifts, BERT's encoder norms (two per block and the embeddings') lose their biases; the
    masked-LM head keeps its LayerNorm with bias (the zoo's BertMLMHeadTransform builds an nn.LayerNorm
    whatever norm_type says)."""
    base = model_from_zoo_section({**BERT, "name": "bert"}).params
    assert model_from_zoo_section({**BERT, "name": "bert", "norm_type": norm_type}).params - base == difference


def test_a_bert_section_may_window_every_other_block():
    model = model_from_zoo_section(
        {**BERT, "name": "bert", "attention_sliding_window_length": 8, "sliding_window_every_other_decoder_layer": True}
    )
    assert "sliding-window attention: each query attends to at most 8 keys in every other block" in model.notes


def test_a_section_that_gives_every_size_notes_no_default_and_keeps_what_it_read():
    model = model_from_zoo_section(GPT2)
    assert model.notes == (TIED,)
    assert model.max_seq_len == POSITIONS and model.config == GPT2
    untied = model_from_zoo_section({**GPT2, "share_embedding_weights": False})
    assert untied.notes == ("head: the LM head (its own weights)",)


def test_without_a_source_errors_name_the_model_section():
    assert_refused(
        refusal(model_from_zoo_section, {"name": "mamba"}), UnknownNameError, None, "'mamba'", source="model"
    )


@pytest.mark.parametrize("spelled", ["fc-mnist", "FC_MNIST", " fc_mnist "])
def test_a_zoo_name_is_read_whatever_its_case_dashes_or_spaces(spelled):
    model = model_from_zoo_section({"name": spelled, "hidden_sizes": [20]})
    assert model.family == "fc_mnist" and model.max_seq_len is None and model.seq_len is None


@pytest.mark.parametrize(
    "norms",
    [
        {"norm_type": "rmsnorm", "attention_qk_norm_layer": "rmsnorm"},
        {"use_rms_norm": True, "attention_qk_norm_layer": "rmsnorm"},
        {"norm_type": "biasless-layernorm", "attention_qk_norm_layer": "biasless-layernorm"},
        {"use_biasless_norm": True, "attention_qk_norm_layer": "biasless-layernorm"},
        {"attention_qk_norm_layer": "layernorm"},
    ],
)
def test_a_qk_norm_of_the_model_s_own_norm_type_is_read(norms):
    model = model_from_zoo_section({**GPT2, **norms})
    assert sum(1 for layer in model.layers if layer.name.endswith((".q_norm", ".k_norm"))) == 2 * BLOCKS


def test_a_mixture_notes_its_experts_and_top_k():
    model = model_from_zoo_section({**GPT2, "moe": {"num_experts": 2, "top_k": 1}})
    assert model.notes[-1] == (
        f"mixture of experts: {model.params:,} parameters in all (2 experts per block), {model.active_params:,} "
        "active per token (top 1); weight streaming moves every expert's weights each step, compute uses the "
        "active ones"
    )


def test_key_value_groups_may_equal_the_heads_and_are_refused_beyond_the_widest_model():
    mqa = {**GPT2, "attention_module": "multiquery_attention"}
    every_head = model_from_zoo_section({**mqa, "extra_attention_params": {"num_kv_groups": HEADS}})
    assert every_head.params == params()
    error = refusal(model_from_zoo_section, {**mqa, "extra_attention_params": {"num_kv_groups": MAX_WIDTH + 1}})
    key, words = "extra_attention_params.num_kv_groups", ("number of key/value groups", f"1..{MAX_WIDTH}")
    assert_refused(error, ModelConfigError, key, key, *words, str(MAX_WIDTH + 1))


def test_relative_attention_buckets_beyond_their_limit_are_refused():
    relative = {**GPT2, "position_embedding_type": "relative", "num_relative_attention_buckets": 2**24 + 1}
    error = refusal(model_from_zoo_section, relative)
    key = "num_relative_attention_buckets"
    assert_refused(error, ModelConfigError, key, key, "relative attention buckets", f"1..{2**24}", str(2**24 + 1))


# A small vision transformer: a 32x32 image of 3 channels in 8x8 patches (16 of them, and a class token),
# d wide, BLOCKS pre-LN blocks, 10 classes.
VIT = {
    "name": "vision_transformer",
    "hidden_size": D,
    "num_hidden_layers": BLOCKS,
    "num_heads": HEADS,
    "filter_size": FFN,
    "image_size": [32, 32],
    "patch_size": [8, 8],
    "num_classes": 10,
}
PATCHES = 16
VIT_BLOCK = 4 * D * D + 4 * D + 2 * D * FFN + FFN + D + 4 * D  # attention, MLP, two LayerNorms
VIT_PARAMS = (3 * 8 * 8 * D + D) + D + (PATCHES + 1) * D + BLOCKS * VIT_BLOCK + 2 * D + (D * 10 + 10)


def test_a_vision_transformer_embeds_patches_and_classifies_its_class_token():
    model = model_from_zoo_section(VIT)
    assert model.params == VIT_PARAMS
    assert model.seq_len == model.max_seq_len == PATCHES + 1
    assert model.layers[0].name == "patch_embedding" and model.layers[0].tokens == PATCHES
    assert "vision transformer: 16 patches of 8x8 pixels and a class token" in model.notes[-1]
    assert model_from_zoo_section(VIT, seq_len=PATCHES + 1).params == VIT_PARAMS  # a file's own sequence length


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({"prepend_cls_token": False}, -D - D),  # the class token and its position row
        ({"position_embedding_type": "fixed"}, -(PATCHES + 1) * D),  # sinusoids: no parameters
        ({"position_embedding_type": None}, -(PATCHES + 1) * D),
        ({"use_embed_proj_bias": False}, -D),
        ({"num_channels": 1}, -2 * 8 * 8 * D),
        ({"use_final_layer_norm": False}, -2 * D),
        ({"use_post_embed_layer_norm": True}, 2 * D),
        ({"use_encoder_pooler_layer": True}, D * D + D),
        ({"use_dinov2_classifier": True}, D * 10),  # the class token and the patches' mean, side by side
        ({"use_bias_in_output": False}, -10),
        ({"use_masked_patches": True}, D),
        ({"nonlinearity": "swiglu"}, BLOCKS * (D * FFN + FFN)),
        ({"image_size": [64, 32]}, PATCHES * D),  # 16 more patches, 16 more position rows
        ({"patch_size": [4, 8]}, -3 * 4 * 8 * D + PATCHES * D),  # half-height patches: twice as many
    ],
)
def test_each_vision_transformer_key_adds_or_removes_what_it_describes(change, difference):
    assert model_from_zoo_section({**VIT, **change}).params - VIT_PARAMS == difference


@pytest.mark.parametrize(
    ("change", "kind", "key", "words"),
    [
        ({"image_size": [30, 32]}, ModelConfigError, None, ("image_size", "[30, 32]", "patch_size", "[8, 8]")),
        ({"image_size": 32}, ModelConfigError, "image_size", ("image_size", "[height, width]", "32")),
        ({"patch_size": [8, 0]}, ModelConfigError, "patch_size", ("patch_size",)),
        ({"layerscale_value": 0.1}, UnsupportedModelError, "layerscale_value", ("layerscale_value", "LayerScale")),
        ({"freeze": ["^vit_model"]}, UnsupportedModelError, "freeze", ("freeze", "'^vit_model'", "frozen layers")),
        ({"position_embedding_type": "rotary"}, ModelConfigError, "position_embedding_type", ("'rotary'",)),
    ],
)
def test_a_wrong_vision_transformer_key_is_refused_saying_which(change, kind, key, words):
    assert_refused(refusal(model_from_zoo_section, {**VIT, **change}), kind, key, *words)


@pytest.mark.parametrize(
    ("pooler", "heads"),
    [
        (False, "heads counted: a classifier over 10 classes"),
        (True, "heads counted: the pooler and a classifier over 10 classes"),
    ],
)
def test_a_vision_transformer_s_note_names_the_heads_it_counted(pooler, heads):
    assert model_from_zoo_section({**VIT, "use_encoder_pooler_layer": pooler}).notes[-1].endswith(heads)


def test_a_vision_transformer_without_an_image_size_reads_the_zoo_s_224_by_224():
    """224x224 in 8x8 patches: 28 x 28 = 784 patches and the class token."""
    model = model_from_zoo_section({key: value for key, value in VIT.items() if key != "image_size"})
    assert model.seq_len == 28 * 28 + 1
    assert model.layers[0].tokens == 28 * 28


def test_a_vision_transformer_s_sequence_is_the_one_its_image_gives():
    error = refusal(model_from_zoo_section, VIT, seq_len=16)
    assert_refused(error, ModelConfigError, "image_size", "seq_len", "16", "17", "image_size", "patch_size")


# A small DiT: a 16x16x4 latent in 4x4 patches (16 of them), d wide, BLOCKS blocks, 10 labels.
DIT = {
    "name": "dit",
    "hidden_size": D,
    "num_hidden_layers": BLOCKS,
    "num_heads": HEADS,
    "filter_size": FFN,
    "patch_size": [4, 4],
    "num_classes": 10,
    "frequency_embedding_size": 32,
    "position_embedding_type": "fixed",
    "vae": {"latent_size": [16, 16], "latent_channels": 4},
}
CONDITIONED = D * D + D  # one dense layer over the conditioning vector
DIT_BLOCK = 4 * D * D + 4 * D + 2 * D * FFN + FFN + D + 6 * CONDITIONED  # attention, MLP, 2 adaptive norms, 2 gates
DIT_PARAMS = (
    (4 * 4 * 4 * D + D)  # patches
    + (32 * D + D + D * D + D)  # the timestep MLP
    + 11 * D  # 10 labels and "no label"
    + BLOCKS * DIT_BLOCK
    + 2 * CONDITIONED  # the final adaptive norm
    + (D * 4 * 4 * 4 + 4)  # the transposed convolution back to 4 channels
)


def test_a_dit_conditions_every_block_on_the_timestep_and_the_label():
    model = model_from_zoo_section(DIT)
    assert model.params == DIT_PARAMS and model.seq_len == model.max_seq_len == PATCHES
    conditioned = [layer for layer in model.layers if layer.name.startswith("block0.") and layer.tokens == 1]
    assert len(conditioned) == 6  # they read one vector a sample, not every patch
    assert not [layer for layer in model.layers if layer.kind == "layer_norm"]


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({"label_dropout_rate": 0.0}, -D),  # no row for "no label" without guidance dropout
        ({"position_embedding_type": "learned"}, PATCHES * D),
        ({"use_ffn_bias": False}, -BLOCKS * (FFN + D)),
        ({"latent_size": [32, 16]}, 0),  # the model's own latent size wins over the VAE's: 32 patches, no table
        ({"latent_channels": 8}, 4 * 4 * 4 * D + D * 4 * 4 * 4 + 4),
    ],
)
def test_each_dit_key_adds_or_removes_what_it_describes(change, difference):
    model = model_from_zoo_section({**DIT, **change})
    assert model.params - DIT_PARAMS == difference
    if "latent_size" in change:
        assert model.seq_len == 2 * PATCHES


@pytest.mark.parametrize(
    ("change", "kind", "key", "words"),
    [
        ({"vae": {"latent_channels": 4}}, ModelConfigError, "vae.latent_size", ("vae.latent_size",)),
        ({"patch_size": [3, 3]}, ModelConfigError, None, ("latent_size", "[16, 16]", "patch_size", "[3, 3]")),
        ({"patch_size": [4, 2]}, UnsupportedModelError, "patch_size", ("patch_size", "[4, 2]", "non-square")),
        ({"block_type": "in_context"}, UnsupportedModelError, "block_type", ("block_type", "'in_context'")),
        ({"encoder_nonlinearity": "swiglu"}, UnsupportedModelError, "encoder_nonlinearity", ("'swiglu'", "gated")),
        ({"position_embedding_type": "rotary"}, ModelConfigError, "position_embedding_type", ("'rotary'", "DiT")),
    ],
)
def test_a_wrong_dit_key_is_refused_saying_which(change, kind, key, words):
    assert_refused(refusal(model_from_zoo_section, {**DIT, **change}), kind, key, *words)


def test_a_dit_s_sequence_is_the_one_its_latent_gives():
    error = refusal(model_from_zoo_section, DIT, seq_len=17)
    assert_refused(error, ModelConfigError, None, "seq_len", "17", "16", "latent_size", "patch_size")


def test_dit_xl_2_is_the_original_less_its_frozen_sine_table_and_its_variance_channels():
    """facebookresearch/DiT's train.py logs "DiT Parameters: 675,129,632" for DiT-XL/2; that count includes
    its fixed 2D sine table (a Parameter with requires_grad=False), and its final layer predicts the
    variance too (8 channels, through a dense layer) where the zoo's transposed convolution gives 4."""
    xl = {
        **DIT,
        "hidden_size": 1152,
        "num_hidden_layers": 28,
        "num_heads": 16,
        "filter_size": 4608,
        "patch_size": [2, 2],
        "num_classes": 1000,
        "frequency_embedding_size": 256,
        "vae": {"latent_size": [32, 32], "latent_channels": 4},
    }
    frozen_sines = 256 * 1152
    variance = (1152 * 2 * 2 * 8 + 2 * 2 * 8) - (1152 * 4 * 2 * 2 + 4)
    assert model_from_zoo_section(xl).params == 675_129_632 - frozen_sines - variance


IMAGE_KEYS = (
    "hidden_size",
    "num_heads",
    "image_size",
    "patch_size",
    "num_channels",
    "prepend_cls_token",
    "position_embedding_type",
    "num_classes",
    "latent_size",
    "latent_channels",
    "vae",
    "label_dropout_rate",
    "frequency_embedding_size",
    "use_dinov2_classifier",
    "layerscale_value",
    "block_type",
    "nonlinearity",
    "encoder_nonlinearity",
)
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5000),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(-2, 600), max_size=3),
    st.dictionaries(
        st.sampled_from(["latent_size", "latent_channels"]), st.integers(-1, 64) | st.lists(st.integers(-1, 64))
    ),
)


@given(
    name=st.sampled_from(["vision_transformer", "dit"]),
    section=st.dictionaries(st.sampled_from(IMAGE_KEYS), ANY_VALUE, max_size=6),
    seq_len=st.none() | st.integers(-1, 300),
)
def test_whatever_an_image_model_section_says_it_is_built_or_refused_with_a_typed_error(name, section, seq_len):
    try:
        model = model_from_zoo_section({**DIT, "name": name, **section}, seq_len=seq_len)
    except CsConformError:
        return
    assert model.params > 0 and model.seq_len >= 1
