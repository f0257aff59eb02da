"""Each family's optional fields as transformers reads them: defaults, alternative spellings, notes, refusals.

``data/hf_configs/variants.json`` holds small configs that set each family's optional fields away
from their defaults, or leave them out, or spell them the way transformers' config classes also
accept (Falcon's and BLOOM's ``n_embed``, Mixtral's ``num_experts``). Their parameter counts were
written by ``count_with_transformers.py`` from transformers' own model classes (``variants`` in
``transformers_counts.json``), so a reader that loses a field, a default or a spelling disagrees
with a count no one here wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from model_refusals import assert_refused, refusal

from csconform.errors import ModelConfigError, UnreadableDocumentError, UnsupportedModelError
from csconform.perf.models.config_file import read_config
from csconform.perf.models.fields import ACTIVATIONS, MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH
from csconform.perf.models.hf_config import model_from_config

DATA = Path(__file__).parent / "data" / "hf_configs"
VARIANTS = json.loads((DATA / "variants.json").read_text())
TRANSFORMERS = json.loads((DATA / "transformers_counts.json").read_text())["variants"]

FALCON_2048 = "max_position_embeddings absent: transformers' default 2048 is the longest sequence"
TIED, UNTIED = "head: the LM head (tied to the token embedding)", "head: the LM head (its own weights)"
MOE = "weight streaming moves every expert's weights each step, compute uses the active ones"
NOTES = {
    "falcon-defaults": (
        FALCON_2048,
        "rotary positions, 1 key/value head, 1 LayerNorm per block, attention and MLP in parallel",
        TIED,
    ),
    "falcon-sequential-biased": (FALCON_2048, "rotary positions, 4 key/value heads, 2 LayerNorms per block", TIED),
    "falcon-new-one-norm": (
        "alibi positions, 2 key/value heads, 1 LayerNorm per block, attention and MLP in parallel",
        TIED,
    ),
    "falcon-new-sequential": ("rotary positions, 2 key/value heads, 2 LayerNorms per block", TIED),
    "falcon-untied": (
        "rotary positions, 4 key/value heads, 1 LayerNorm per block, attention and MLP in parallel",
        UNTIED,
    ),
    "phi-qk-norm-gqa": (UNTIED,),
    "bloom-hub-spelling": (
        "ALiBi positions: no position table; 2048 (no seq_length given) is the default sequence length, not a limit",
        TIED,
    ),
    "gpt2-n_inner-untied": (UNTIED,),
    "gpt2-sequence-classifier": ("head: a score layer over 3 labels (sequence classification), no LM head",),
    "gptj-n_inner": (UNTIED,),
    "gpt_neox-unbiased": (UNTIED,),
    "llama-biases-gqa-head_dim": (UNTIED,),
    "mistral-defaults": (
        "num_key_value_heads absent: transformers' default 8 key/value heads",
        "sliding-window attention: each query attends to at most 4096 keys in every block",
        UNTIED,
    ),
    "qwen2-tied-windowed": (
        "num_key_value_heads absent: transformers' default 32 key/value heads",
        "sliding-window attention: each query attends to at most 16 keys in blocks 1..1",
        TIED,
    ),
    "mixtral-num_experts": (
        "num_key_value_heads absent: transformers' default 8 key/value heads",
        UNTIED,
        "mixture of experts: 189,248 parameters in all (4 experts per block), 78,656 active per token (top 1); " + MOE,
    ),
    "opt-projected-unbiased": ("OPT's learned position table has max_position_embeddings + 2 = 66 rows", TIED),
    "opt-no-final-norm": ("OPT's learned position table has max_position_embeddings + 2 = 66 rows", TIED),
    "bert-sequence-classifier": (
        "heads counted (*ForSequenceClassification): a pooler-sized dense layer and a classifier",
    ),
    "resnet-defaults": (),
    "resnet-small": (),
    "resnet-no-first-shortcut": (),
    "resnet-downsample-first-stage": (),
    "gpt2-bare": ("head: none (the bare model)",),
    "bert-lm-head": (
        "heads counted (*LMHeadModel): the LM head (transform, LayerNorm, decoder tied to the token embedding, "
        "its bias); no pooler",
    ),
    "bert-no-architectures": (
        "heads counted (no architectures: *ForPreTraining): the pooler, next-sentence prediction and the masked-LM "
        "head (decoder tied to the embedding)",
    ),
    "roberta-no-architectures": (
        "heads counted (no architectures: *ForMaskedLM): the masked-LM head (transform, LayerNorm, decoder tied to the "
        "token embedding, its bias); no pooler",
    ),
    "mixtral-expert-defaults": (
        UNTIED,
        "mixture of experts: 337,216 parameters in all (8 experts per block), 116,032 active per token (top 2); " + MOE,
    ),
    "qwen2-window-defaults": ("sliding-window attention: each query attends to at most 4096 keys in no block", UNTIED),
    "mistral-no-window": (UNTIED,),
    "roberta-sequence-classifier": (
        "heads counted (*ForSequenceClassification): a pooler-sized dense layer and a classifier",
    ),
    "mpt-defaults": (
        "ALiBi positions: no position table; 2048 (no max_seq_len given) is the default sequence length, not a limit",
        TIED,
    ),
    "mpt-untied-stated": (
        "ALiBi positions: no position table; 64 (max_seq_len, the training length) is the default sequence length, "
        "not a limit",
        UNTIED,
    ),
    "gemma2-defaults": (
        "head_dim absent: transformers' default 256 (not hidden_size / heads)",
        "num_key_value_heads absent: transformers' default 4 key/value heads",
        "sliding-window attention: each query attends to at most 4096 keys in 2 of the 3 blocks (every other block "
        "from block 0, transformers' default)",
        TIED,
    ),
    "gemma2-biased-layer-types": (
        "sliding-window attention: each query attends to at most 16 keys in 2 of the 3 blocks (layer_types)",
        UNTIED,
    ),
}


def test_every_variant_has_its_notes_written_down():
    assert sorted(NOTES) == sorted(VARIANTS) == sorted(TRANSFORMERS)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_optional_fields_count_what_transformers_builds_from_the_same_config(name):
    model = model_from_config(VARIANTS[name])
    assert model.params == TRANSFORMERS[name]["params"]
    assert model.active_params == TRANSFORMERS[name].get("active_params", TRANSFORMERS[name]["params"])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_family_notes_how_it_read_the_config(name):
    assert model_from_config(VARIANTS[name]).notes == NOTES[name]


# (variant, the spelling it uses -> another spelling the reader accepts for the same field)
SPELLINGS = [
    ("falcon-new-one-norm", {"hidden_size": "n_embed", "num_hidden_layers": "n_layer"}),
    ("falcon-new-one-norm", {"num_attention_heads": "n_head", "num_kv_heads": "n_head_kv"}),
    ("falcon-defaults", {"hidden_size": "n_embed", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head"}),
    ("bloom-hub-spelling", {"n_embed": "hidden_size", "n_layer": "num_hidden_layers"}),
    ("bloom-hub-spelling", {"num_attention_heads": "n_head"}),
    ("gpt2-n_inner-untied", {"n_embd": "hidden_size", "n_layer": "num_hidden_layers", "n_head": "num_attention_heads"}),
    ("gpt2-n_inner-untied", {"n_positions": "max_position_embeddings"}),
    ("gptj-n_inner", {"n_positions": "max_position_embeddings", "n_embd": "hidden_size"}),
    ("mixtral-num_experts", {"num_experts": "num_local_experts"}),
    ("mpt-defaults", {"d_model": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads"}),
]


def respelled(config: dict, renames: dict[str, str]) -> dict:
    return {renames.get(key, key): value for key, value in config.items()}


@pytest.mark.parametrize(("name", "renames"), SPELLINGS)
def test_every_accepted_spelling_of_a_field_builds_the_same_model(name, renames):
    model = model_from_config(VARIANTS[name])
    other = model_from_config(respelled(VARIANTS[name], renames))
    assert other.layers == model.layers and other.notes == model.notes and other.max_seq_len == model.max_seq_len


@pytest.mark.parametrize(("name", "renames"), SPELLINGS)
def test_two_spellings_of_a_field_that_disagree_are_refused_naming_both(name, renames):
    for spelled, other in renames.items():
        config = {**VARIANTS[name], other: VARIANTS[name][spelled] * 2}
        with pytest.raises(ModelConfigError, match="contradictory fields for the") as info:
            model_from_config(config)
        assert {spelled, other} <= set(info.value.message.replace("=", " ").replace(",", " ").split())
        assert info.value.key in (spelled, other)


WIDEST_MLP = 4 * MAX_WIDTH
# (variant, change, the error, its key, what its message names; the wording is pinned in
# test_model_reader_messages.py)
REFUSED = [
    (
        "falcon-sequential-biased",
        {"ffn_hidden_size": WIDEST_MLP + 1},
        ModelConfigError,
        "ffn_hidden_size",
        ("ffn_hidden_size", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "falcon-new-one-norm",
        {"num_ln_in_parallel_attn": 3},
        ModelConfigError,
        "num_ln_in_parallel_attn",
        ("num_ln_in_parallel_attn", "norms per block", "1..2", "3"),
    ),
    ("falcon-new-one-norm", {"num_kv_heads": 3}, ModelConfigError, "num_kv_heads", ("num_kv_heads", "3", "4")),
    ("falcon-defaults", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    # the key is the spelling that holds the heads, not a null one
    (
        "falcon-defaults",
        {"n_head": None, "num_attention_heads": 5},
        ModelConfigError,
        "num_attention_heads",
        ("64", "5"),
    ),
    ("falcon-defaults", {"multi_query": "yes"}, ModelConfigError, "multi_query", ("multi_query", "'yes'")),
    ("falcon-defaults", {"parallel_attn": 1}, ModelConfigError, "parallel_attn", ("parallel_attn", "1")),
    ("falcon-defaults", {"bias": "no"}, ModelConfigError, "bias", ("bias", "'no'")),
    ("falcon-defaults", {"alibi": 0}, ModelConfigError, "alibi", ("alibi", "0")),
    (
        "falcon-defaults",
        {"new_decoder_architecture": "true"},
        ModelConfigError,
        "new_decoder_architecture",
        ("new_decoder_architecture", "'true'"),
    ),
    (
        "phi-qk-norm-gqa",
        {"intermediate_size": WIDEST_MLP + 1},
        ModelConfigError,
        "intermediate_size",
        ("intermediate_size", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "phi-qk-norm-gqa",
        {"partial_rotary_factor": 1.5},
        ModelConfigError,
        "partial_rotary_factor",
        ("partial_rotary_factor", "[0.0, 1.0]", "1.5"),
    ),
    ("phi-qk-norm-gqa", {"hidden_act": "gelu_old"}, ModelConfigError, "hidden_act", ("hidden_act", "'gelu_old'")),
    ("phi-qk-norm-gqa", {"qk_layernorm": "no"}, ModelConfigError, "qk_layernorm", ("qk_layernorm", "'no'")),
    ("bloom-hub-spelling", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    (
        "gpt2-n_inner-untied",
        {"n_inner": WIDEST_MLP + 1},
        ModelConfigError,
        "n_inner",
        ("n_inner", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "gptj-n_inner",
        {"n_inner": WIDEST_MLP + 1},
        ModelConfigError,
        "n_inner",
        ("n_inner", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    ("gptj-n_inner", {"rotary_dim": 17}, ModelConfigError, "rotary_dim", ("rotary_dim", "17", "16")),
    (
        "gptj-n_inner",
        {"rotary_dim": MAX_WIDTH + 1},
        ModelConfigError,
        "rotary_dim",
        ("rotary_dim", "rotary dimension", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    ("gptj-n_inner", {"n_head": 5}, ModelConfigError, "n_head", ("64", "5")),
    (
        "gptj-n_inner",
        {"activation_function": "gelu_old"},
        ModelConfigError,
        "activation_function",
        ("activation_function", "'gelu_old'"),
    ),
    (
        "opt-projected-unbiased",
        {"activation_function": "gelu_old"},
        ModelConfigError,
        "activation_function",
        ("activation_function", "'gelu_old'"),
    ),
    (
        "opt-projected-unbiased",
        {"layer_norm_elementwise_affine": False},
        UnsupportedModelError,
        "layer_norm_elementwise_affine",
        ("layer_norm_elementwise_affine",),
    ),
    (
        "opt-projected-unbiased",
        {"ffn_dim": WIDEST_MLP + 1},
        ModelConfigError,
        "ffn_dim",
        ("ffn_dim", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "opt-projected-unbiased",
        {"word_embed_proj_dim": MAX_WIDTH + 1},
        ModelConfigError,
        "word_embed_proj_dim",
        ("word_embed_proj_dim", "word embedding width", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    ("opt-projected-unbiased", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    ("opt-projected-unbiased", {"enable_bias": "no"}, ModelConfigError, "enable_bias", ("enable_bias", "'no'")),
    (
        "opt-no-final-norm",
        {"_remove_final_layer_norm": 1},
        ModelConfigError,
        "_remove_final_layer_norm",
        ("_remove_final_layer_norm", "1"),
    ),
    ("gpt_neox-unbiased", {"hidden_act": "gelu_old"}, ModelConfigError, "hidden_act", ("hidden_act", "'gelu_old'")),
    (
        "gpt_neox-unbiased",
        {"intermediate_size": WIDEST_MLP + 1},
        ModelConfigError,
        "intermediate_size",
        ("intermediate_size", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    ("gpt_neox-unbiased", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    ("gpt_neox-unbiased", {"rotary_pct": 1.5}, ModelConfigError, "rotary_pct", ("rotary_pct", "[0.0, 1.0]", "1.5")),
    (
        "gpt_neox-unbiased",
        {"use_parallel_residual": "no"},
        ModelConfigError,
        "use_parallel_residual",
        ("use_parallel_residual", "'no'"),
    ),
    ("gpt_neox-unbiased", {"attention_bias": 0}, ModelConfigError, "attention_bias", ("attention_bias", "0")),
    (
        "llama-biases-gqa-head_dim",
        {"intermediate_size": WIDEST_MLP + 1},
        ModelConfigError,
        "intermediate_size",
        ("intermediate_size", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "llama-biases-gqa-head_dim",
        {"hidden_act": "gelu_old"},
        ModelConfigError,
        "hidden_act",
        ("hidden_act", "'gelu_old'"),
    ),
    (
        "qwen2-tied-windowed",
        {"sliding_window": MAX_SEQUENCE + 1},
        ModelConfigError,
        "sliding_window",
        ("sliding_window", "sliding window", f"1..{MAX_SEQUENCE}", str(MAX_SEQUENCE + 1)),
    ),
    (
        "qwen2-tied-windowed",
        {"max_window_layers": MAX_LAYERS + 1},
        ModelConfigError,
        "max_window_layers",
        ("max_window_layers", "first windowed block", f"0..{MAX_LAYERS}", str(MAX_LAYERS + 1)),
    ),
    (
        "mistral-defaults",
        {"sliding_window": MAX_SEQUENCE + 1},
        ModelConfigError,
        "sliding_window",
        ("sliding_window", "sliding window", f"1..{MAX_SEQUENCE}", str(MAX_SEQUENCE + 1)),
    ),
    (
        "mixtral-num_experts",
        {"num_experts": 2**16 + 1},
        ModelConfigError,
        "num_experts",
        ("num_experts", "number of experts", f"1..{2**16}", str(2**16 + 1)),
    ),
    (
        "mixtral-num_experts",
        {"num_experts_per_tok": 2**16 + 1},
        ModelConfigError,
        "num_experts_per_tok",
        ("num_experts_per_tok", "experts per token", f"1..{2**16}", str(2**16 + 1)),
    ),
    ("mistral-defaults", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    (
        "llama-biases-gqa-head_dim",
        {"head_dim": MAX_WIDTH + 1},
        ModelConfigError,
        "head_dim",
        ("head_dim", "head dimension", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    (
        "llama-biases-gqa-head_dim",
        {"num_key_value_heads": MAX_WIDTH + 1},
        ModelConfigError,
        "num_key_value_heads",
        ("num_key_value_heads", "number of key/value heads", f"1..{MAX_WIDTH}", str(MAX_WIDTH + 1)),
    ),
    (
        "bert-sequence-classifier",
        {"id2label": ["NEGATIVE", "POSITIVE"]},
        ModelConfigError,
        "id2label",
        ("id2label", "list"),
    ),
    (
        "bert-sequence-classifier",
        {"num_labels": 2**24 + 1},
        ModelConfigError,
        "num_labels",
        ("num_labels", "number of labels", f"1..{2**24}", str(2**24 + 1)),
    ),
    (
        "bert-sequence-classifier",
        {"intermediate_size": WIDEST_MLP + 1},
        ModelConfigError,
        "intermediate_size",
        ("intermediate_size", "MLP width", f"1..{WIDEST_MLP}", str(WIDEST_MLP + 1)),
    ),
    (
        "bert-sequence-classifier",
        {"type_vocab_size": 2**16 + 1},
        ModelConfigError,
        "type_vocab_size",
        ("type_vocab_size", "number of token types", f"1..{2**16}", str(2**16 + 1)),
    ),
    ("bert-sequence-classifier", {"num_attention_heads": 5}, ModelConfigError, "num_attention_heads", ("64", "5")),
    (
        "mistral-defaults",
        {"num_attention_heads": 4},
        ModelConfigError,
        "num_key_value_heads",
        ("num_key_value_heads", "8", "4"),
    ),
    ("mpt-defaults", {"n_heads": 5}, ModelConfigError, "n_heads", ("64", "5")),
    (
        "mpt-defaults",
        {"no_bias": "yes"},
        ModelConfigError,
        "no_bias",
        (
            "no_bias",
            "'yes'",
        ),
    ),
    (
        "mpt-defaults",
        {"learned_pos_emb": 1},
        ModelConfigError,
        "learned_pos_emb",
        (
            "learned_pos_emb",
            "1",
        ),
    ),
    (
        "mpt-defaults",
        {"expansion_ratio": 4.0},
        ModelConfigError,
        "expansion_ratio",
        (
            "expansion_ratio",
            "MLP expansion ratio",
            f"1..{MAX_WIDTH}",
            "4.0",
        ),
    ),
    (
        "mpt-defaults",
        {"max_seq_len": MAX_SEQUENCE + 1},
        ModelConfigError,
        "max_seq_len",
        (
            "max_seq_len",
            "maximum sequence length",
            f"1..{MAX_SEQUENCE}",
            str(MAX_SEQUENCE + 1),
        ),
    ),
    (
        "mpt-defaults",
        {"attn_config": [True]},
        ModelConfigError,
        "attn_config",
        (
            "attn_config",
            "list",
        ),
    ),
    (
        "mpt-untied-stated",
        {"attn_config": {"alibi": "on"}},
        ModelConfigError,
        "attn_config.alibi",
        (
            "attn_config.alibi",
            "'on'",
        ),
    ),
    (
        "mpt-untied-stated",
        {"attn_config": {"attn_type": 1}},
        ModelConfigError,
        "attn_config.attn_type",
        (
            "attn_config.attn_type",
            "1",
        ),
    ),
    (
        "mpt-untied-stated",
        {"ffn_config": {"ffn_type": None, "fc_type": "torch"}, "attn_config": {"qk_ln": 0}},
        ModelConfigError,
        "attn_config.qk_ln",
        (
            "attn_config.qk_ln",
            "0",
        ),
    ),
    (
        "mpt-untied-stated",
        {"ffn_config": "mptmlp"},
        ModelConfigError,
        "ffn_config",
        (
            "ffn_config",
            "str",
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"head_dim": MAX_WIDTH + 1},
        ModelConfigError,
        "head_dim",
        (
            "head_dim",
            "head dimension",
            f"1..{MAX_WIDTH}",
            str(MAX_WIDTH + 1),
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"num_key_value_heads": 3},
        ModelConfigError,
        "num_key_value_heads",
        (
            "num_key_value_heads",
            "4",
        ),
    ),
    (
        "gemma2-defaults",
        {"num_attention_heads": 6},
        ModelConfigError,
        "num_key_value_heads",
        (
            "num_key_value_heads",
            "6",
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"attention_bias": "no"},
        ModelConfigError,
        "attention_bias",
        (
            "attention_bias",
            "'no'",
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"hidden_activation": "gelu_old"},
        ModelConfigError,
        "hidden_activation",
        (
            "hidden_activation",
            "'gelu_old'",
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"hidden_act": 3},
        ModelConfigError,
        "hidden_act",
        (
            "hidden_act",
            "3",
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"sliding_window": MAX_SEQUENCE + 1},
        ModelConfigError,
        "sliding_window",
        (
            "sliding_window",
            "sliding window",
            f"1..{MAX_SEQUENCE}",
            str(MAX_SEQUENCE + 1),
        ),
    ),
    (
        "gemma2-biased-layer-types",
        {"layer_types": ["full_attention", "sliding_attention"]},
        ModelConfigError,
        "layer_types",
        ("layer_types",),
    ),
    (
        "gemma2-biased-layer-types",
        {"layer_types": ["full_attention", "local", "full_attention"]},
        ModelConfigError,
        "layer_types",
        ("layer_types",),
    ),
    (
        "gemma2-biased-layer-types",
        {"layer_types": "full_attention"},
        ModelConfigError,
        "layer_types",
        (
            "layer_types",
            "'full_attention'",
        ),
    ),
    (
        "gemma2-defaults",
        {"intermediate_size": WIDEST_MLP + 1},
        ModelConfigError,
        "intermediate_size",
        (
            "intermediate_size",
            "MLP width",
            f"1..{WIDEST_MLP}",
            str(WIDEST_MLP + 1),
        ),
    ),
]


@pytest.mark.parametrize(("name", "change", "kind", "key", "words"), REFUSED)
def test_out_of_range_and_contradictory_fields_are_refused_saying_which_and_why(name, change, kind, key, words):
    error = refusal(model_from_config, {**VARIANTS[name], **change}, source="config.json")
    assert_refused(error, kind, key, *words, source="config.json")


RESNET = {"model_type": "resnet", "depths": [1, 2], "hidden_sizes": [16, 32], "embedding_size": 8, "image_size": 32}


def test_resnet_is_bottleneck_unless_told_otherwise_and_has_no_sequence_length():
    assert model_from_config(RESNET).layers == model_from_config({**RESNET, "layer_type": "bottleneck"}).layers
    basic = refusal(model_from_config, {**RESNET, "layer_type": "basic"})
    assert_refused(basic, ModelConfigError, "layer_type", "layer_type", "'bottleneck'", "'basic'")
    sequence = refusal(model_from_config, RESNET, seq_len=128)
    assert_refused(sequence, ModelConfigError, None, "resnet", "sequence length")


FOUR_STAGES = {"model_type": "resnet", "depths": [1, 1, 1, 1], "hidden_sizes": [16, 32, 64, 128], "embedding_size": 8}


# (change, the key refused, what the message names; the wording is pinned in test_model_reader_messages.py)
@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"image_size": 31}, "image_size", ("image_size", "31", "4 stages")),
        ({"image_size": 63, "downsample_in_first_stage": True}, "image_size", ("image_size", "63", "4 stages")),
        ({"image_size": 2**14 + 1}, "image_size", ("image_size", "image size", "1..16384", "16385")),
        ({"num_channels": 2**16 + 1}, "num_channels", ("num_channels", "input channels", "1..65536", "65537")),
        ({"embedding_size": 2**16 + 1}, "embedding_size", ("embedding_size", "stem width", "1..65536", "65537")),
        ({"depths": [1, 2049, 1, 1]}, "depths", ("depths", "1..2048")),
        ({"hidden_sizes": [16, 32, 64, 2**16 + 4]}, "hidden_sizes", ("hidden_sizes", "1..65536")),
        ({"depths": [1, 1, 1]}, "hidden_sizes", ("3 depths", "4 hidden_sizes")),
        ({"hidden_sizes": [16, 32, 64, 130]}, "hidden_sizes", ("hidden_sizes", "4")),
        ({"layer_type": "basic"}, "layer_type", ("layer_type", "'basic'")),
    ],
)
def test_resnet_fields_out_of_range_are_refused_saying_which_and_why(change, key, words):
    error = refusal(model_from_config, {**FOUR_STAGES, **change})
    assert_refused(error, ModelConfigError, key, *words)


@pytest.mark.parametrize(
    "change",
    [
        {"image_size": 32},
        {"image_size": 64, "downsample_in_first_stage": True},
        {"image_size": 2**14},
        {"num_channels": 2**16},
        {"embedding_size": 2**16},
        {"hidden_sizes": [16, 32, 64, 2**16]},
        {"depths": [1, 2048, 1, 1]},
    ],
)
def test_resnet_fields_at_their_limits_are_read(change):
    model = model_from_config({**FOUR_STAGES, **change})
    first = model.layers[0]
    assert first.name == "conv1" and first.in_features == change.get("num_channels", 3)
    assert first.out_features == change.get("embedding_size", 8)
    assert sum(layer.name.endswith(".conv3") for layer in model.layers) == sum(change.get("depths", [1, 1, 1, 1]))


def test_resnet_image_size_defaults_to_224():
    assert model_from_config(FOUR_STAGES).flops_per_sample == (
        model_from_config({**FOUR_STAGES, "image_size": 224}).flops_per_sample
    )
    assert model_from_config(FOUR_STAGES).flops_per_sample != (
        model_from_config({**FOUR_STAGES, "image_size": 256}).flops_per_sample
    )


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("falcon-sequential-biased", "ffn_hidden_size"),
        ("phi-qk-norm-gqa", "intermediate_size"),
        ("gptj-n_inner", "n_inner"),
        ("gpt2-n_inner-untied", "n_inner"),
        ("opt-projected-unbiased", "ffn_dim"),
        ("gpt_neox-unbiased", "intermediate_size"),
        ("llama-biases-gqa-head_dim", "intermediate_size"),
        ("bert-sequence-classifier", "intermediate_size"),
    ],
)
def test_the_widest_mlp_allowed_is_read(name, field):
    model = model_from_config({**VARIANTS[name], field: WIDEST_MLP})
    assert any(layer.in_features == WIDEST_MLP for layer in model.layers if layer.name.endswith(".fc2"))


def test_the_widest_rotary_dimension_and_opt_projection_allowed_are_read():
    wide_heads = {**VARIANTS["gptj-n_inner"], "n_embd": MAX_WIDTH, "n_head": 1, "rotary_dim": MAX_WIDTH}
    assert model_from_config(wide_heads).params > MAX_WIDTH**2
    projected = model_from_config({**VARIANTS["opt-projected-unbiased"], "word_embed_proj_dim": MAX_WIDTH})
    assert any(layer.name == "project_out" and layer.out_features == MAX_WIDTH for layer in projected.layers)


def test_opt_without_word_embed_proj_dim_projects_nothing():
    unprojected = {k: v for k, v in VARIANTS["opt-projected-unbiased"].items() if k != "word_embed_proj_dim"}
    model = model_from_config(unprojected)
    assert model.layers == model_from_config({**unprojected, "word_embed_proj_dim": 64}).layers
    assert not any(layer.name.startswith("project_") for layer in model.layers)


def test_phi_defaults_its_optional_fields():
    config = dict(VARIANTS["phi-qk-norm-gqa"])  # no partial_rotary_factor, no hidden_act: 0.5 and gelu_new
    assert "partial_rotary_factor" not in config and "hidden_act" not in config
    assert model_from_config({**config, "partial_rotary_factor": 1.0, "hidden_act": "gelu_new"}).params == (
        model_from_config(config).params
    )


def test_bloom_plans_any_sequence_length_and_says_where_its_default_comes_from():
    bloom = VARIANTS["bloom-hub-spelling"]
    assert model_from_config(bloom).seq_len == 2048 and model_from_config(bloom).max_seq_len is None
    trained = model_from_config({**bloom, "seq_length": 32}, seq_len=4096)  # ALiBi: the length is no limit
    assert trained.seq_len == 4096 and trained.max_seq_len is None
    assert trained.notes[0] == (
        "ALiBi positions: no position table; 32 (seq_length, the training length) is the default sequence length, "
        "not a limit"
    )
    assert model_from_config({**bloom, "seq_length": 32}).seq_len == 32


def test_falcon_without_max_position_embeddings_allows_transformers_default_2048():
    falcon = VARIANTS["falcon-defaults"]
    assert model_from_config(falcon).max_seq_len == model_from_config(falcon).seq_len == 2048
    with pytest.raises(ModelConfigError, match="longer than the config's max_position_embeddings"):
        model_from_config(falcon, seq_len=2049)
    stated = model_from_config({**falcon, "max_position_embeddings": 4096}, seq_len=4096)
    assert stated.max_seq_len == 4096 and FALCON_2048 not in stated.notes


# --- reading the file: keys given twice, YAML anchors -------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("twice.json", '{"model_type": "mlp",\n "layer_widths": [2, 3],\n "layer_widths": [4]}', 3),
        ("twice.yaml", "model_type: mlp\nlayer_widths: [2, 3]\nlayer_widths: [4]\n", 3),
    ],
)
def test_a_field_given_twice_is_refused_naming_it_and_its_line(tmp_path, name, text, line):
    (tmp_path / name).write_text(text)
    with pytest.raises(UnreadableDocumentError) as info:
        read_config(tmp_path / name)
    assert (info.value.key, info.value.line) == ("layer_widths", line)


def test_yaml_is_read_as_pyyaml_safe_load_reads_it(tmp_path):
    """Anchors, aliases and merge keys come out as yaml.safe_load builds them; a node that refers to
    itself is nested without end, and refused."""
    text = "model_type: mlp\nlayer_widths: [2, 3]\nbase: &b {x: 1, y: [1, 2]}\nother: {<<: *b, z: 2}\nsame: *b\n"
    (tmp_path / "anchors.yaml").write_text(text)
    read, expected = read_config(tmp_path / "anchors.yaml"), yaml.safe_load(text)
    assert read["other"] == expected["other"] == {"x": 1, "y": [1, 2], "z": 2}
    assert read["same"] is read["base"]
    assert model_from_config(read).params == 9
    (tmp_path / "loop.yaml").write_text(text + "loop: &l {self: *l, n: 1}\n")
    with pytest.raises(UnreadableDocumentError, match="nested deeper"):
        read_config(tmp_path / "loop.yaml")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_layers_hold_what_layer_declares(name):
    """``bias`` and ``tied`` are true or false on every layer a reader builds (the cost model reads only their truth,
    so a None would count the same and go unnoticed until something else reads the field)."""
    for layer in model_from_config(VARIANTS[name]).layers:
        assert isinstance(layer.bias, bool) and isinstance(layer.tied, bool), layer


def test_resnet_layers_follow_the_image_through_the_stem_and_the_stages():
    """A 7x7 stride-2 stem conv and a stride-2 max pool leave image/4 positions a side; each later stage halves it."""
    model = model_from_config({**FOUR_STAGES, "image_size": 64})
    stem_conv, stem_norm = model.layers[:2]
    assert (stem_conv.name, stem_conv.kind, stem_conv.kernel_size, stem_conv.stride) == ("conv1", "conv", 7, 2)
    assert (stem_norm.name, stem_norm.kind) == ("bn1", "layer_norm")
    assert stem_conv.tokens == stem_norm.tokens == 32 * 32  # the stem conv's output positions
    side = {f"layer{stage + 1}": 16 // 2**stage for stage in range(4)}
    for layer in model.layers:
        if layer.name.endswith(".conv3"):
            assert layer.tokens == side[layer.name.split(".")[0]] ** 2, layer
    assert model.layers[-1].name == "fc" and model.layers[-1].tokens == 1


def test_resnet_blocks_stride_on_the_3x3_conv_and_project_the_shortcut_where_the_shape_changes():
    """ResNet v1.5 bottleneck blocks at a 64-pixel image (16 positions a side after the stem): per layer of the
    first block of each stage, (name, kind, in, out, positions, kernel, stride), written out from the design."""
    model = model_from_config({**FOUR_STAGES, "image_size": 64, "depths": [2, 1, 1, 1]})
    rows = [(x.name, x.kind, x.in_features, x.out_features, x.tokens, x.kernel_size, x.stride) for x in model.layers]
    assert all(not x.bias for x in model.layers if x.kind == "conv")
    # kernels group by block (pipelined mode places a group together): the stem, each block, the head
    assert [x.group for x in model.layers[:2]] == ["stem", "stem"] and model.layers[-1].group == "head"
    assert all(x.group == ".".join(x.name.split(".")[:2]) for x in model.layers[2:-1])
    assert rows[2:18] == [
        ("layer1.0.conv1", "conv", 8, 4, 256, 1, 1),
        ("layer1.0.bn1", "layer_norm", 4, 4, 256, 1, 1),
        ("layer1.0.conv2", "conv", 4, 4, 256, 3, 1),
        ("layer1.0.bn2", "layer_norm", 4, 4, 256, 1, 1),
        ("layer1.0.conv3", "conv", 4, 16, 256, 1, 1),
        ("layer1.0.bn3", "layer_norm", 16, 16, 256, 1, 1),
        ("layer1.0.downsample", "conv", 8, 16, 256, 1, 1),  # 8 -> 16 channels: projected
        ("layer1.0.downsample.bn", "layer_norm", 16, 16, 256, 1, 1),
        ("layer1.1.conv1", "conv", 16, 4, 256, 1, 1),  # the second block keeps the shape: no projection
        ("layer1.1.bn1", "layer_norm", 4, 4, 256, 1, 1),
        ("layer1.1.conv2", "conv", 4, 4, 256, 3, 1),
        ("layer1.1.bn2", "layer_norm", 4, 4, 256, 1, 1),
        ("layer1.1.conv3", "conv", 4, 16, 256, 1, 1),
        ("layer1.1.bn3", "layer_norm", 16, 16, 256, 1, 1),
        ("layer2.0.conv1", "conv", 16, 8, 256, 1, 1),  # at the previous stage's 16 x 16
        ("layer2.0.bn1", "layer_norm", 8, 8, 256, 1, 1),
    ]
    assert rows[18:24] == [
        ("layer2.0.conv2", "conv", 8, 8, 64, 3, 2),  # the stride sits on the 3x3 conv
        ("layer2.0.bn2", "layer_norm", 8, 8, 64, 1, 1),
        ("layer2.0.conv3", "conv", 8, 32, 64, 1, 1),
        ("layer2.0.bn3", "layer_norm", 32, 32, 64, 1, 1),
        ("layer2.0.downsample", "conv", 16, 32, 64, 1, 2),
        ("layer2.0.downsample.bn", "layer_norm", 32, 32, 64, 1, 1),
    ]
    assert rows[-1] == ("fc", "dense", 128, 2, 1, 1, 1)


@pytest.mark.parametrize(
    ("name", "architectures", "known"),
    [
        (
            "gpt2-bare",
            "GPT2DoubleHeadsModel",
            "*ForCausalLM, *LMHeadModel, *ForSequenceClassification, the bare *Model",
        ),
        (
            "gpt2-bare",
            "GPT2ForTokenClassification",
            "*ForCausalLM, *LMHeadModel, *ForSequenceClassification, the bare *Model",
        ),
        (
            "bert-lm-head",
            "BertForQuestionAnswering",
            "*ForMaskedLM, *ForCausalLM, *LMHeadModel, *ForPreTraining, *ForSequenceClassification, *Model",
        ),
    ],
)
def test_a_head_that_is_not_modelled_is_refused_listing_the_known_ones(name, architectures, known):
    """GPT2DoubleHeadsModel ends in Model but is not the bare model: it has an LM head and a multiple-choice head."""
    error = refusal(model_from_config, {**VARIANTS[name], "architectures": [architectures]})
    assert_refused(error, UnsupportedModelError, "architectures", "architectures", architectures, *known.split(", "))


def test_a_decoder_sequence_classifier_without_labels_scores_two_once_per_sequence():
    config = {k: v for k, v in VARIANTS["gpt2-sequence-classifier"].items() if k != "num_labels"}
    score = model_from_config(config).layers[-1]  # transformers' default num_labels is 2
    assert (score.name, score.group, score.in_features, score.out_features, score.tokens) == ("score", "head", 64, 2, 1)
    assert not score.bias


def test_qwen2_has_no_window_unless_use_sliding_window_is_true():
    """transformers' Qwen2Config defaults use_sliding_window to False: sliding_window alone sets no window."""
    windowed = VARIANTS["qwen2-tied-windowed"]
    unset = {key: value for key, value in windowed.items() if key != "use_sliding_window"}
    model = model_from_config(unset)
    assert model.layers == model_from_config({**unset, "use_sliding_window": False}).layers
    assert model.layers != model_from_config(windowed).layers
    assert not any("sliding-window" in note for note in model.notes)


LLAMA_1 = {
    key: value for key, value in VARIANTS["llama-biases-gqa-head_dim"].items() if key != "max_position_embeddings"
}


def test_llama_reads_max_sequence_length_only_without_max_position_embeddings():
    """A LLaMA-1 conversion's max_sequence_length is the longest sequence when it is the only length given;
    beside max_position_embeddings it is ignored, and the note says which one governed."""
    first = model_from_config({**LLAMA_1, "max_sequence_length": 48})
    assert first.max_seq_len == 48 and first.seq_len == 48
    assert first.notes[0] == (
        "max_sequence_length (a LLaMA-1 conversion field transformers ignores) is the longest sequence, as the "
        "config has no max_position_embeddings; rotary positions have no table, so it does not change the count"
    )
    both = model_from_config({**LLAMA_1, "max_sequence_length": 48, "max_position_embeddings": 64})
    assert both.max_seq_len == 64 and both.params == first.params
    assert both.notes[0] == (
        "max_position_embeddings governs; max_sequence_length is a LLaMA-1 field transformers ignores"
    )


ACTIVATION_FIELDS = [
    ("gpt2-n_inner-untied", "activation_function"),
    ("gptj-n_inner", "activation_function"),
    ("gpt_neox-unbiased", "hidden_act"),
    ("llama-biases-gqa-head_dim", "hidden_act"),
    ("phi-qk-norm-gqa", "hidden_act"),
    ("opt-projected-unbiased", "activation_function"),
    ("bert-sequence-classifier", "hidden_act"),
]


@pytest.mark.parametrize(("name", "field"), ACTIVATION_FIELDS)
def test_every_known_activation_is_read_and_changes_no_count(name, field):
    """An activation has no parameters: each known one (or null) builds the same layers; an unknown one,
    or one that is not a name, is refused."""
    base = model_from_config(VARIANTS[name])
    for activation in (*ACTIVATIONS, None):
        assert model_from_config({**VARIANTS[name], field: activation}).layers == base.layers, activation
    for wrong in (3, ["gelu"]):
        error = refusal(model_from_config, {**VARIANTS[name], field: wrong})
        assert_refused(error, ModelConfigError, field, field, repr(wrong), *ACTIVATIONS)


@pytest.mark.parametrize(
    ("name", "field"), [("gpt_neox-unbiased", "rotary_pct"), ("phi-qk-norm-gqa", "partial_rotary_factor")]
)
def test_a_rotary_fraction_from_zero_to_one_is_read_and_changes_no_count(name, field):
    base = model_from_config(VARIANTS[name])
    for fraction in (0, 0.0, 0.25, 1, 1.0, None):
        assert model_from_config({**VARIANTS[name], field: fraction}).layers == base.layers, fraction
    for wrong in ("0.5", True, -0.01, 1.01):
        error = refusal(model_from_config, {**VARIANTS[name], field: wrong})
        assert_refused(error, ModelConfigError, field, field, "[0.0, 1.0]", repr(wrong))


def test_gpt_neox_reads_use_parallel_residual_for_its_type_only():
    """Parallel or sequential, each GPT-NeoX block has its two LayerNorms: the flag changes no count."""
    base = model_from_config(VARIANTS["gpt_neox-unbiased"])
    for flag in (True, False, None):
        assert model_from_config({**VARIANTS["gpt_neox-unbiased"], "use_parallel_residual": flag}).layers == base.layers


@pytest.mark.parametrize(("experts", "per_token"), [(2, 2), (2, 1), (2**16, 2**16)])
def test_mixtral_reads_experts_and_top_k_up_to_their_limits_and_notes_the_mixture(experts, per_token):
    config = {**VARIANTS["mixtral-num_experts"], "num_experts": experts, "num_experts_per_tok": per_token}
    model = model_from_config(config)
    routers = [layer for layer in model.layers if layer.name.endswith(".router")]
    assert routers and routers[0].out_features == experts
    assert any(
        note.startswith("mixture of experts:") and f"({experts} experts per block)" in note for note in model.notes
    )


def test_qwen2_windows_the_blocks_from_28_on_unless_max_window_layers_says_otherwise():
    """transformers' Qwen2Config defaults max_window_layers to 28."""
    config = {**VARIANTS["qwen2-window-defaults"], "num_hidden_layers": 30}
    model = model_from_config(config)
    assert "sliding-window attention: each query attends to at most 4096 keys in blocks 28..29" in model.notes


def test_the_largest_label_count_and_token_types_are_read():
    base = VARIANTS["bert-sequence-classifier"]
    labels = model_from_config({**base, "num_labels": 2**24})
    assert {layer.name: layer for layer in labels.layers}["classifier"].out_features == 2**24
    token_types = model_from_config({**base, "type_vocab_size": 2**16})
    assert {layer.name: layer for layer in token_types.layers}["token_type_embeddings"].in_features == 2**16


BERT_LM = VARIANTS["bert-lm-head"]


def test_an_encoder_s_lm_head_is_its_own_unless_tied_and_causal_lm_counts_like_masked_lm():
    tied = model_from_config(BERT_LM)
    untied = model_from_config({**BERT_LM, "tie_word_embeddings": False})
    assert untied.params - tied.params == BERT_LM["vocab_size"] * BERT_LM["hidden_size"]
    causal = model_from_config({**BERT_LM, "architectures": ["BertLMHeadModel"]})
    roberta_causal = model_from_config({**BERT_LM, "architectures": ["RobertaForCausalLM"]})
    assert causal.params == roberta_causal.params == tied.params


def test_an_encoder_classifier_without_labels_scores_two_classes():
    """transformers' PretrainedConfig defaults num_labels to 2."""
    base = {k: v for k, v in VARIANTS["bert-sequence-classifier"].items() if k != "num_labels"}
    model = model_from_config(base)
    assert {layer.name: layer for layer in model.layers}["classifier"].out_features == 2


def test_an_unmodelled_encoder_head_is_refused_naming_every_architecture_given():
    names = ["BertForMultipleChoice", "BertForNextSentencePrediction"]
    error = refusal(model_from_config, {**BERT_LM, "architectures": names})
    assert_refused(error, UnsupportedModelError, "architectures", "architectures", *names)


def test_gpt2_with_cross_attention_is_refused_and_n_ctx_beside_max_position_embeddings_is_not_a_default():
    error = refusal(model_from_config, {**VARIANTS["gpt2-bare"], "add_cross_attention": True})
    assert_refused(error, UnsupportedModelError, "add_cross_attention", "add_cross_attention", "cross-attention")
    spelled = {k: v for k, v in VARIANTS["gpt2-bare"].items() if k not in ("n_positions", "max_position_embeddings")}
    model = model_from_config({**spelled, "max_position_embeddings": 48, "n_ctx": 2048})
    assert model.max_seq_len == 48
    assert model.notes[0] == (
        "n_ctx (2048) is a legacy field transformers ignores; n_positions (48) sets the position table and the "
        "longest sequence"
    )


def test_an_unmodelled_decoder_head_is_refused_naming_every_architecture_given():
    names = ["GPT2ForQuestionAnswering", "GPT2ForTokenClassification"]
    error = refusal(model_from_config, {**VARIANTS["gpt2-bare"], "architectures": names})
    assert_refused(error, UnsupportedModelError, "architectures", "architectures", *names)


def test_one_head_per_feature_is_read():
    bare = VARIANTS["gpt2-bare"]
    assert model_from_config({**bare, "n_head": bare["n_embd"]}).params == model_from_config(bare).params


def test_layers_beyond_max_layers_and_architectures_that_are_not_a_list_are_refused():
    bare = VARIANTS["gpt2-bare"]
    deep = refusal(model_from_config, {**bare, "n_layer": MAX_LAYERS + 1})
    assert_refused(deep, ModelConfigError, "n_layer", "n_layer", f"1..{MAX_LAYERS}", str(MAX_LAYERS + 1))
    assert (
        len(
            [
                layer
                for layer in model_from_config({**bare, "n_layer": MAX_LAYERS}).layers
                if layer.name.endswith(".attn")
            ]
        )
        == MAX_LAYERS
    )
    text = refusal(model_from_config, {**bare, "architectures": "GPT2Model"})
    assert_refused(text, ModelConfigError, "architectures", "architectures", "'GPT2Model'")


@pytest.mark.parametrize(
    ("field", "quantity", "limit"),
    [
        ("n_embd", "model width", MAX_WIDTH),
        ("n_head", "number of attention heads", MAX_WIDTH),
        ("vocab_size", "vocabulary size", 2**24),
        ("n_positions", "maximum sequence length", MAX_SEQUENCE),
    ],
)
def test_each_size_every_transformer_states_is_refused_beyond_its_limit(field, quantity, limit):
    error = refusal(model_from_config, {**VARIANTS["gpt2-bare"], field: limit + 1})
    assert_refused(error, ModelConfigError, field, field, quantity, f"1..{limit}", str(limit + 1))


def test_an_mpt_field_transformers_ignores_is_refused_saying_both_builds_and_what_would_plan():
    with pytest.raises(UnsupportedModelError) as info:
        model_from_config({**VARIANTS["mpt-defaults"], "expansion_ratio": 8}, source="config.json")
    assert info.value.key == "expansion_ratio"
    assert info.value.message == (
        "field expansion_ratio: 8 is not modelled: transformers' MptForCausalLM builds an MLP 4 x d_model wide "
        "whatever it says, MosaicML's own code builds what it says, and the two counts differ; csconform plans MPT "
        "where both agree (expansion_ratio 4)"
    )


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"no_bias": False}, "no_bias"),
        ({"attn_config": {"alibi": False}}, "attn_config.alibi"),
        ({"attn_config": {"attn_type": "multiquery_attention"}}, "attn_config.attn_type"),
        ({"attn_config": {"qk_ln": True}}, "attn_config.qk_ln"),
        ({"ffn_config": {"ffn_type": "mptglu"}}, "ffn_config.ffn_type"),
    ],
)
def test_every_mpt_field_on_which_mosaicml_and_transformers_differ_is_refused_naming_it(change, key):
    with pytest.raises(UnsupportedModelError) as info:
        model_from_config({**VARIANTS["mpt-untied-stated"], **change})
    assert info.value.key == key and info.value.message.startswith(f"field {key}: ")


def test_mpt_plans_any_sequence_length_and_has_no_position_table():
    mpt = model_from_config(VARIANTS["mpt-untied-stated"], seq_len=4096)  # max_seq_len is 64
    assert mpt.max_seq_len is None and mpt.seq_len == 4096
    assert mpt.params == model_from_config(VARIANTS["mpt-untied-stated"]).params
    assert not any(layer.kind == "embedding" and "position" in layer.name for layer in mpt.layers)


def test_gemma2_windows_the_blocks_layer_types_names_else_every_other_block_from_block_0():
    def windows(config: dict) -> list[int]:
        return [layer.window for layer in model_from_config(config, seq_len=64).layers if layer.kind == "attention"]

    assert windows(VARIANTS["gemma2-biased-layer-types"]) == [0, 16, 16]
    assert windows({**VARIANTS["gemma2-defaults"], "num_hidden_layers": 4}) == [4096, 0, 4096, 0]
    assert windows({**VARIANTS["gemma2-defaults"], "sliding_window": None}) == [0, 0, 0]


def test_gemma2_norms_the_input_and_output_of_attention_and_mlp():
    model = model_from_config(VARIANTS["gemma2-defaults"])
    block = [layer.name for layer in model.layers if layer.group == "block0"]
    assert block == [
        "block0.ln1",
        "block0.attn",
        "block0.attn_out_ln",
        "block0.ln2",
        "block0.fc1",
        "block0.fc2",
        "block0.mlp_out_ln",
    ]
    norms = [layer for layer in model.layers if layer.kind == "layer_norm"]
    assert len(norms) == 4 * 3 + 1 and not any(layer.bias for layer in norms)  # RMSNorm: a scale per feature only
