"""The zoo's T5 class (``t5``, and ``transformer``, the original encoder-decoder it also builds): each key's
effect on the count, the published checkpoints it reproduces, and the cross-attention's FLOPs.

The small section (``small_zoo_section.T5_SIZES``) has d = 64, 2 encoder and 2 decoder blocks, 4 heads
of 16, an FFN 256 wide, 100 tokens, 32 source and 16 target positions. Each expected count is written
out from what the release's ``t5_model.py`` builds (1.9.1 and 2.10.0 build the same modules): one token
table, a relative-position bias of 32 buckets x 4 heads per stack, per encoder block the Q, K, V and
output projections and the FFN, per decoder block those and a cross-attention, two norms per encoder
block, three per decoder block and a final norm per stack, each an RMSNorm of d scales by default.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_refusals import assert_refused, refusal
from small_zoo_section import BLOCKS, FFN, HEAD_WIDTH, HEADS, SOURCE_POSITIONS, T5_SIZES, TARGET_POSITIONS, VOCAB, D

from csconform.errors import ModelConfigError, UnsupportedModelError
from csconform.perf.models.fields import MAX_LAYERS
from csconform.perf.models.layer import Layer
from csconform.perf.models.zoo_section import model_from_zoo_section
from csconform.perf.plan import plan

HF = json.loads((Path(__file__).parent / "data" / "hf_configs" / "transformers_counts.json").read_text())["counts"]
T5 = {"name": "t5", **T5_SIZES}
INNER = HEADS * HEAD_WIDTH  # the attention's width, heads x d_kv
ATTENTION = 4 * D * INNER  # Q, K, V and the output projection, no biases
FFN_WEIGHTS = 2 * D * FFN
ENCODER_BLOCK = ATTENTION + FFN_WEIGHTS + 2 * D
DECODER_BLOCK = 2 * ATTENTION + FFN_WEIGHTS + 3 * D
RELATIVE = 2 * 32 * HEADS  # one bias table per stack
NORMS = 2 * BLOCKS + 3 * BLOCKS + 2  # per block, and one final norm per stack
ATTENTIONS = BLOCKS + 2 * BLOCKS  # self-attention in every block, cross-attention in the decoder's
FFNS = 2 * BLOCKS
T5_1X = {**T5, "decoder_num_hidden_layers": BLOCKS, "encoder_nonlinearity": "relu", "decoder_nonlinearity": "relu"}
"""1.x's T5 reads these without a default."""
SMALL = VOCAB * D + RELATIVE + BLOCKS * ENCODER_BLOCK + BLOCKS * DECODER_BLOCK + 2 * D


def without(section: dict, key: str) -> dict:
    return {k: v for k, v in section.items() if k != key}


def params(release: str | None = None, **change) -> int:
    return model_from_zoo_section({**T5, **change}, release=release).params


def test_the_small_section_counts_what_the_release_builds():
    model = model_from_zoo_section(T5)
    assert model.params == SMALL == 236_800
    assert model.family == "t5" and model.seq_len == SOURCE_POSITIONS and model.max_seq_len == SOURCE_POSITIONS
    assert model_from_zoo_section({**T5, "name": "transformer"}).params == SMALL  # the same class


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({"norm_type": "layernorm"}, NORMS * D),
        ({"norm_type": "biasless-layernorm"}, 0),
        ({"extra_ids": 10}, 10 * D),  # sentinel tokens, in the one table the LM head is tied to
        ({"share_embedding_weights": False}, VOCAB * D),  # the LM head's own weights, no bias
        ({"share_encoder_decoder_embedding": False}, VOCAB * D),  # a decoder table
        ({"share_encoder_decoder_embedding": False, "tgt_vocab_size": 90}, 90 * D - VOCAB * D + VOCAB * D),
        ({"share_encoder_decoder_embedding": False, "tgt_vocab_size": 90, "extra_ids": 10}, 10 * D + 100 * D),
        ({"position_embedding_type": "fixed"}, -RELATIVE),  # sinusoids, not trained
        ({"position_embedding_type": None}, -RELATIVE),
        ({"position_embedding_type": "learned_absolute"}, -RELATIVE + (SOURCE_POSITIONS + TARGET_POSITIONS) * D),
        ({"relative_attention_num_buckets": 8}, -2 * (32 - 8) * HEADS),
        ({"use_projection_bias_in_attention": True}, ATTENTIONS * 3 * INNER),  # Q, K, V biases; never the output's
        ({"use_ffn_bias": True}, FFNS * (FFN + D)),
        ({"use_ffn_bias": True, "encoder_nonlinearity": "gelu"}, 0),  # the release drops FFN biases with gelu
        ({"use_ffn_bias": True, "decoder_nonlinearity": "gelu"}, 0),
        ({"encoder_nonlinearity": "geglu"}, FFNS * D * FFN),  # a second input projection, in both stacks
        ({"encoder_nonlinearity": "swiglu", "use_ffn_bias": True}, FFNS * (D * FFN + FFN + FFN + D)),
        ({"decoder_nonlinearity": "geglu"}, 0),  # the release builds the decoder with encoder_nonlinearity
        ({"decoder_num_hidden_layers": 3}, DECODER_BLOCK),
        ({"d_kv": 32}, ATTENTIONS * 4 * D * HEADS * (32 - HEAD_WIDTH)),
        (
            {"attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 1}},
            -ATTENTIONS * 2 * D * (INNER - HEAD_WIDTH),  # K and V of one head's width
        ),
        ({"src_max_position_embeddings": 64, "tgt_max_position_embeddings": 8}, 0),  # relative: no table
    ],
)
def test_each_key_adds_or_removes_what_it_describes(change, difference):
    assert params(**change) - SMALL == difference


@pytest.mark.parametrize(
    ("change", "difference"),
    [
        ({}, 0),  # 1.x's T5 reads use_t5_layer_norm (default true: RMSNorm), not norm_type
        ({"use_t5_layer_norm": False}, NORMS * D),
        ({"norm_type": "layernorm"}, 0),
        ({"attention_module": "multiquery_attention"}, 0),  # not a 1.x T5 key: every head has its K and V
    ],
)
def test_a_1x_section_reads_the_1x_keys(change, difference):
    section = {
        **T5,
        "decoder_num_hidden_layers": BLOCKS,
        "encoder_nonlinearity": "relu",
        "decoder_nonlinearity": "relu",
    }
    assert model_from_zoo_section({**section, **change}, release="1.9").params - SMALL == difference


def test_a_1x_section_takes_its_position_lengths_from_the_input_and_its_sizes_from_the_file():
    section = {
        **T5,
        "decoder_num_hidden_layers": BLOCKS,
        "encoder_nonlinearity": "relu",
        "decoder_nonlinearity": "relu",
    }
    del section["src_max_position_embeddings"], section["tgt_max_position_embeddings"]
    learned = {**section, "position_embedding_type": "learned_absolute"}
    model = model_from_zoo_section(learned, release="1.9", seq_len=24, target_len=12)
    assert model.params == SMALL - RELATIVE + (24 + 12) * D and model.seq_len == model.max_seq_len == 24
    assert (
        "src_max_position_embeddings absent: the input's src_max_sequence_length (24), as the flat layout's T5 sets it"
        in model.notes
    )
    missing = refusal(model_from_zoo_section, learned, release="1.9")
    assert_refused(missing, ModelConfigError, "src_max_position_embeddings", "src_max_position_embeddings")
    flat_2x = {**without(learned, "decoder_num_hidden_layers"), "norm_type": "rmsnorm"}
    assert model_from_zoo_section(flat_2x, release="2.3.1", seq_len=24, target_len=12).params == model.params
    trainer = refusal(model_from_zoo_section, flat_2x, release="2.4.0", seq_len=24, target_len=12)
    assert_refused(trainer, ModelConfigError, "src_max_position_embeddings", "src_max_position_embeddings")
    for key in ("d_model", "d_kv", "d_ff", "num_heads", "encoder_num_hidden_layers", "decoder_num_hidden_layers"):
        error = refusal(model_from_zoo_section, {k: v for k, v in section.items() if k != key}, release="1.9")
        assert_refused(error, ModelConfigError, key, key)


def test_a_2x_section_takes_the_class_defaults():
    model = model_from_zoo_section({"name": "t5", "src_max_position_embeddings": 8, "tgt_max_position_embeddings": 4})
    d, inner, ffn, layers = 512, 8 * 64, 2048, 6  # T5ForConditionalGenerationModelConfig's defaults
    blocks = layers * (4 * d * inner + 2 * d * ffn + 2 * d) + layers * (8 * d * inner + 2 * d * ffn + 3 * d)
    assert model.params == 32128 * d + 2 * 32 * 8 + blocks + 2 * d
    assert "d_model absent: the Model Zoo's default 512" in model.notes


@pytest.mark.parametrize(
    ("shape", "published"),
    [
        ({"d_model": 512, "d_ff": 2048, "encoder_num_hidden_layers": 6, "num_heads": 8}, HF["t5-small"]),
        ({"d_model": 768, "d_ff": 3072, "encoder_num_hidden_layers": 12, "num_heads": 12}, 222_903_552),
        ({"d_model": 1024, "d_ff": 4096, "encoder_num_hidden_layers": 24, "num_heads": 16}, 737_668_096),
        (  # T5 v1.1: a gated-gelu FFN and an untied LM head
            {
                "d_model": 512,
                "d_ff": 1024,
                "encoder_num_hidden_layers": 8,
                "num_heads": 6,
                "encoder_nonlinearity": "geglu",
            }
            | {"share_embedding_weights": False},
            76_961_152,
        ),
    ],
    ids=["t5-small", "t5-base", "t5-large", "t5-v1_1-small"],
)
def test_the_zoo_class_at_a_published_shape_has_transformers_count(shape, published):
    """transformers' T5ForConditionalGeneration at these shapes (32128 tokens, d_kv 64, RMSNorms, relative
    positions, tied unless said) has these trainable parameters (t5-small's is in transformers_counts.json;
    the others counted with transformers 4.46.3 on the meta device, see the report of this change)."""
    section = {"name": "t5", "d_kv": 64, "src_max_position_embeddings": 512, "tgt_max_position_embeddings": 512}
    published = published["T5WithLMHeadModel"]["params"] if isinstance(published, dict) else published
    assert model_from_zoo_section({**section, **shape}).params == published


def test_the_decoder_attends_to_the_encoder_s_positions():
    model = model_from_zoo_section(T5, seq_len=24, target_len=12)
    by_name = {layer.name: layer for layer in model.layers}
    assert by_name["token_embeddings"].tokens == 24 + 12  # one table, both sequences looked up
    assert by_name["encoder.block0.attn"].tokens == 24 and by_name["encoder.block0.attn"].kv_tokens == 0
    assert by_name["decoder.block0.attn"].tokens == 12 and by_name["decoder.block0.attn"].keys_per_query == 12
    cross = by_name["decoder.block1.cross_attn"]
    assert (cross.tokens, cross.kv_tokens, cross.keys_per_query) == (12, 24, 24)
    assert by_name["lm_head"].tokens == 12 and by_name["lm_head"].tied
    assert model.seq_len == 24 and model.at_seq_len(16).layers[0].tokens == 16 + 12


def test_the_model_flops_are_the_6n_formula_with_the_keys_at_the_encoder_s_positions():
    source, target = 24, 12
    model = model_from_zoo_section(T5, seq_len=source, target_len=target)
    matmul = (
        2 * source * BLOCKS * (ATTENTION + FFN_WEIGHTS)  # the encoder
        + 2 * target * BLOCKS * (ATTENTION + 2 * D * INNER + FFN_WEIGHTS)  # self-attention, cross Q and out, FFN
        + 2 * source * BLOCKS * 2 * D * INNER  # the cross-attentions' K and V, at the encoder's positions
        + 2 * target * D * VOCAB  # the tied LM head
    )
    core = 4 * INNER * BLOCKS * (source * source + target * target + target * source)
    norms = 8 * D * (source * (2 * BLOCKS + 1) + target * (3 * BLOCKS + 1))
    loss = (4 + 2) * target * VOCAB
    embeddings = D * (source + target) + HEADS * (source + target)  # the backward scatter-adds
    assert model.flops_per_sample == 3 * (matmul + core + norms) + loss + embeddings


def test_a_cross_attention_scales_its_keys_with_the_encoder_s_positions():
    d, q, tokens, keys = 64, 32, 10, 30
    cross = Layer("attention", d, d, tokens, heads=4, q_features=q, kv_tokens=keys, bias=False)
    own = Layer("attention", d, d, tokens, heads=4, q_features=q, bias=False)
    assert cross.params == own.params == 4 * d * q
    assert cross.forward_flops == 2 * (2 * d * q * tokens + 2 * d * q * keys) + 2 * 2 * tokens * keys * q
    assert cross.memory_bytes == 2 * d * keys and own.memory_bytes == 0
    assert cross.activation_bytes_per_sample == 2 * ((d + 2 * q) * tokens + 2 * q * keys) + 2 * d * keys
    assert own.activation_bytes_per_sample == 2 * (d + 4 * q) * tokens
    windowed = Layer("attention", d, d, tokens, heads=4, kv_tokens=keys, window=8)
    assert windowed.keys_per_query == 8
    with pytest.raises(Exception, match="kv_tokens applies to attention only"):
        Layer("dense", d, d, tokens, kv_tokens=keys)


@pytest.mark.parametrize("mode", ["pipelined", "weight_streaming"])
def test_a_t5_plans_in_both_modes_with_the_encoder_output_as_an_edge_of_each_decoder_stage(mode):
    model = model_from_zoo_section(T5, seq_len=24, target_len=12)
    result = plan(model, mode=mode, batch=64)
    names = [kernel["name"] for kernel in result.kernels]
    assert names[0] == "embeddings" and names[-1] == "head" and "encoder.ln_f" in names
    assert len(names) == 1 + BLOCKS + 1 + BLOCKS + 1 and result.samples_per_s > 0
    if mode == "pipelined":
        decoder = next(k for k in result.pipeline.kernels if k.name == "decoder.block0")
        encoder = next(k for k in result.pipeline.kernels if k.name == "encoder.block0")
        assert decoder.communication_cycles_per_sample > 0 and encoder.communication_cycles_per_sample > 0


@pytest.mark.parametrize(
    ("change", "options", "kind", "key", "words"),
    [
        ({"tgt_vocab_size": 90}, {}, ModelConfigError, "share_encoder_decoder_embedding", ("100", "90")),
        ({"tie_encoder_decoder": True}, {}, UnsupportedModelError, "tie_encoder_decoder", ("false",)),
        ({"position_embedding_type": "alibi"}, {}, UnsupportedModelError, "position_embedding_type", ("alibi",)),
        ({"position_embedding_type": "learned"}, {}, ModelConfigError, "position_embedding_type", ("learned",)),
        ({"encoder_nonlinearity": "silu"}, {}, ModelConfigError, "encoder_nonlinearity", ("silu", "swiglu")),
        ({"norm_type": "batchnorm"}, {}, UnsupportedModelError, "norm_type", ("batchnorm",)),
        ({"d_kv": 0}, {}, ModelConfigError, "d_kv", ("0",)),
        ({"extra_ids": -1}, {}, ModelConfigError, "extra_ids", ("-1",)),
        ({"share_embedding_weights": "yes"}, {}, ModelConfigError, "share_embedding_weights", ("'yes'",)),
        (
            {"attention_module": "multiquery_attention", "extra_attention_params": {"num_kv_groups": 3}},
            {},
            ModelConfigError,
            "extra_attention_params.num_kv_groups",
            ("3", "4"),
        ),
        ({}, {"seq_len": 33}, ModelConfigError, "src_max_position_embeddings", ("33", "32")),
        ({}, {"target_len": 0}, ModelConfigError, "tgt_max_position_embeddings", ("0", "16")),
        ({"src_max_position_embeddings": None}, {}, ModelConfigError, "src_max_position_embeddings", ()),
    ],
)
def test_a_malformed_t5_section_is_refused_naming_the_key(change, options, kind, key, words):
    error = refusal(model_from_zoo_section, {**T5, **change}, source="params.yaml: model", **options)
    assert_refused(error, kind, key, key, *words, source="params.yaml: model")


@pytest.mark.parametrize("key", ["encoder_num_hidden_layers", "decoder_num_hidden_layers"])
def test_a_stack_deeper_than_the_largest_model_is_refused_naming_it(key):
    assert model_from_zoo_section({**T5, key: MAX_LAYERS}).params > 0
    error = refusal(model_from_zoo_section, {**T5, key: MAX_LAYERS + 1}, source="params.yaml: model")
    assert_refused(
        error, ModelConfigError, key, key, f"1..{MAX_LAYERS}", str(MAX_LAYERS + 1), source="params.yaml: model"
    )


def test_a_single_sequence_model_takes_no_target_length():
    error = refusal(model_from_zoo_section, {"name": "gpt2"}, target_len=8)
    assert_refused(error, ModelConfigError, None, "gpt2", "t5")
