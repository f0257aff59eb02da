"""The wording of every refusal of the model readers, pinned once: one row per message template.

The readers are ``model_from_config`` (a Hugging Face ``config.json``, with the typed field access of
``csconform.perf.models.fields``), ``model_from_zoo_section`` (a Model Zoo ``model:`` section) and the
zoo of named models. Each row is the smallest input that reaches one template, the error's type and
key, and the whole line a user reads, file or section first. Every other test of a refusal asserts its
type, its key and what it names (``model_refusals.assert_refused``), so a change of wording is made
here, once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_refusals import refusal
from small_zoo_section import SIZES, T5_SIZES

from csconform.errors import InvalidInputError, ModelConfigError, UnknownNameError, UnsupportedModelError
from csconform.perf.models.fields import MAX_SEQUENCE
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.hf_families import FAMILIES
from csconform.perf.models.layer import Layer
from csconform.perf.models.model_spec import ModelSpec
from csconform.perf.models.zoo import ZOO_NAMES, canonical_name, get_model
from csconform.perf.models.zoo_section import ZOO_FAMILIES, check_zoo_model, model_from_zoo_section

VARIANTS = json.loads((Path(__file__).parent / "data" / "hf_configs" / "variants.json").read_text())
GPT2 = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 128, "vocab_size": 100}
RESNET = {"model_type": "resnet", "depths": [1, 1], "hidden_sizes": [16, 32], "embedding_size": 8, "image_size": 32}
SECTION = {"name": "gpt2", **SIZES}
DIT = {
    "name": "dit",
    "hidden_size": 64,
    "num_heads": 4,
    "patch_size": [4, 4],
    "vae": {"latent_size": [16, 16], "latent_channels": 4},
}
VIT = {"name": "vision_transformer", "hidden_size": 64, "num_heads": 4, "image_size": [32, 32], "patch_size": [8, 8]}
MULTIQUERY = {**SECTION, "attention_module": "multiquery_attention"}
T5 = {"name": "t5", **T5_SIZES}
TYPES = ", ".join(FAMILIES)
ZOO = ", ".join(ZOO_FAMILIES)


def config(fields, **options):
    return lambda: model_from_config(fields, source="config.json", **options)


def section(fields, **options):
    return lambda: model_from_zoo_section(fields, source="params.yaml: model", **options)


def without(fields, key):
    return {k: v for k, v in fields.items() if k != key}


def row(name, read, kind, key, message):
    """One template: how to reach it, the error's type, the key it points at, the whole line."""
    return pytest.param(read, kind, key, message, id=name)


FIELDS = [
    row(
        "not-an-object",
        config([GPT2]),
        ModelConfigError,
        None,
        "config.json: a model config must be an object of fields, got list",
    ),
    row(
        "block-not-an-object",
        config({**GPT2, "csconform": [1]}),
        ModelConfigError,
        "csconform",
        "config.json: field csconform must be an object of fields, got list",
    ),
    row(
        "integer-out-of-range",
        config({**GPT2, "n_layer": 0}),
        ModelConfigError,
        "n_layer",
        "config.json: field n_layer (number of layers) must be an integer in 1..2048, got 0",
    ),
    row(
        "spellings-disagree",
        config({**GPT2, "hidden_size": 128}),
        ModelConfigError,
        "n_embd",
        "config.json: contradictory fields for the model width: n_embd=64, hidden_size=128",
    ),
    row(
        "quantity-missing",
        config(without(GPT2, "n_positions")),
        ModelConfigError,
        "n_positions",
        "config.json: missing field n_positions or max_position_embeddings (the maximum sequence length)",
    ),
    row(
        "id2label-not-an-object",
        config({**VARIANTS["bert-sequence-classifier"], "id2label": ["NEGATIVE"]}),
        ModelConfigError,
        "id2label",
        "config.json: field id2label must be an object, got list",
    ),
    row(
        "not-a-flag",
        config({**GPT2, "tie_word_embeddings": "yes"}),
        ModelConfigError,
        "tie_word_embeddings",
        "config.json: field tie_word_embeddings must be true or false, got 'yes'",
    ),
    row(
        "number-out-of-range",
        config({**VARIANTS["gpt_neox-unbiased"], "rotary_pct": 1.5}),
        ModelConfigError,
        "rotary_pct",
        "config.json: field rotary_pct must be a number in [0.0, 1.0], got 1.5",
    ),
    row(
        "not-a-choice",
        section({**SECTION, "attention_module": "flash"}),
        ModelConfigError,
        "attention_module",
        "params.yaml: model: field attention_module must be one of aiayn_attention, multiquery_attention, got 'flash'",
    ),
    row(
        "unknown-activation",
        config({**GPT2, "activation_function": "gelu_old"}),
        ModelConfigError,
        "activation_function",
        "config.json: field activation_function: unknown activation 'gelu_old'; known: gelu, gelu_new, gelu_fast, "
        "gelu_pytorch_tanh, gelu_python, quick_gelu, relu, silu, swish, tanh, sigmoid",
    ),
    row(
        "not-a-list-of-strings",
        config({**GPT2, "architectures": "GPT2Model"}),
        ModelConfigError,
        "architectures",
        "config.json: field architectures must be a list of strings, got 'GPT2Model'",
    ),
    row(
        "list-missing",
        config({"model_type": "mlp"}),
        ModelConfigError,
        "layer_widths",
        "config.json: missing field layer_widths",
    ),
    row(
        "not-a-list-of-integers",
        config({"model_type": "mlp", "layer_widths": []}),
        ModelConfigError,
        "layer_widths",
        "config.json: field layer_widths must be a non-empty list of integers in 1..4194304",
    ),
]

CONFIG = [
    row(
        "model-type-missing",
        config(without(GPT2, "model_type")),
        ModelConfigError,
        "model_type",
        f"config.json: missing field model_type (one of {TYPES})",
    ),
    row(
        "model-type-not-text",
        config({**GPT2, "model_type": ["gpt2"]}),
        ModelConfigError,
        "model_type",
        f"config.json: field model_type must be a string (one of {TYPES}), got ['gpt2']",
    ),
    row(
        "encoder-decoder",
        config({"model_type": "my_seq2seq", "is_encoder_decoder": True}),
        UnsupportedModelError,
        "model_type",
        "config.json: model_type 'my_seq2seq' is an encoder-decoder model, which csconform does not model: its "
        "encoder and decoder run over inputs and targets of different lengths with cross-attention between them; "
        "plan decoder-only or encoder-only models",
    ),
    row(
        "unknown-model-type",
        config({**GPT2, "model_type": "mamba"}),
        UnknownNameError,
        None,
        f"config.json: unknown model_type 'mamba'; known model types: {TYPES}",
    ),
    row(
        "former-model-type",
        config({**GPT2, "model_type": "phi-msft"}),
        UnknownNameError,
        None,
        f"config.json: unknown model_type 'phi-msft'; known model types: {TYPES} (phi-msft is the former "
        "remote-code format of microsoft/phi-1, phi-1_5 and phi-2; their config.json on the hub now has model_type "
        "phi)",
    ),
    row(
        "block-name",
        config({**GPT2, "csconform": {"name": 3}}),
        ModelConfigError,
        "csconform.name",
        "config.json: field csconform.name must be a string, got 3",
    ),
    row(
        "block-published-count",
        config({**GPT2, "csconform": {"published_params": 0}}),
        ModelConfigError,
        "csconform.published_params",
        "config.json: field csconform.published_params must be a positive number, got 0",
    ),
    row(
        "block-source",
        config({**GPT2, "csconform": {"source": ["a"]}}),
        ModelConfigError,
        "csconform.source",
        "config.json: field csconform.source must be a string, got ['a']",
    ),
]

FAMILY = [
    row(
        "seq-len-out-of-range",
        config(GPT2, seq_len=0),
        ModelConfigError,
        None,
        "config.json: seq_len must be a positive integer up to 16777216, got 0",
    ),
    row(
        "seq-len-beyond-positions",
        config(GPT2, seq_len=129),
        ModelConfigError,
        "n_positions",
        "config.json: seq_len 129 is longer than the config's n_positions (128)",
    ),
    row(
        "width-not-split-by-heads",
        config({**GPT2, "n_head": 5}),
        ModelConfigError,
        "n_head",
        "config.json: contradictory fields: the model width (64) must be a multiple of the number of attention "
        "heads (5)",
    ),
    row(
        "key-value-heads-do-not-divide",
        config({**VARIANTS["mistral-defaults"], "num_attention_heads": 4}),
        ModelConfigError,
        "num_key_value_heads",
        "config.json: contradictory fields: num_key_value_heads (absent, transformers' default 8) must divide the "
        "4 attention heads",
    ),
    row(
        "rotary-dim-beyond-head",
        config({**VARIANTS["gptj-n_inner"], "rotary_dim": 17}),
        ModelConfigError,
        "rotary_dim",
        "config.json: contradictory fields: rotary_dim 17 exceeds the head dimension 16",
    ),
    row(
        "decoder-head-not-modelled",
        config({**GPT2, "architectures": ["GPT2ForQuestionAnswering"]}),
        UnsupportedModelError,
        "architectures",
        "config.json: field architectures: GPT2ForQuestionAnswering is not modelled (known heads: *ForCausalLM, "
        "*LMHeadModel, *ForSequenceClassification, the bare *Model)",
    ),
    row(
        "cross-attention",
        config({**GPT2, "add_cross_attention": True}),
        UnsupportedModelError,
        "add_cross_attention",
        "config.json: field add_cross_attention: cross-attention blocks are not modelled",
    ),
    row(
        "experts-per-token-beyond-experts",
        config({**VARIANTS["mixtral-num_experts"], "num_experts_per_tok": 9}),
        ModelConfigError,
        "num_experts_per_tok",
        "config.json: contradictory fields: num_experts_per_tok (9) exceeds num_local_experts (4)",
    ),
    row(
        "layer-norm-without-weights",
        config({**VARIANTS["opt-projected-unbiased"], "layer_norm_elementwise_affine": False}),
        UnsupportedModelError,
        "layer_norm_elementwise_affine",
        "config.json: field layer_norm_elementwise_affine: LayerNorms without weights are not modelled",
    ),
    row(
        "encoder-head-not-modelled",
        config({**VARIANTS["bert-sequence-classifier"], "architectures": ["BertForMultipleChoice"]}),
        UnsupportedModelError,
        "architectures",
        "config.json: field architectures: BertForMultipleChoice is not modelled (known heads: *ForMaskedLM, "
        "*ForCausalLM, *LMHeadModel, *ForPreTraining, *ForSequenceClassification, *Model)",
    ),
    row(
        "resnet-seq-len",
        config(RESNET, seq_len=8),
        ModelConfigError,
        None,
        "config.json: a resnet has no sequence length to set",
    ),
    row(
        "resnet-basic-blocks",
        config({**RESNET, "layer_type": "basic"}),
        ModelConfigError,
        "layer_type",
        "config.json: field layer_type: only 'bottleneck' is supported, got 'basic'",
    ),
    row(
        "resnet-stages-disagree",
        config({**RESNET, "depths": [1]}),
        ModelConfigError,
        "hidden_sizes",
        "config.json: contradictory fields: 1 depths but 2 hidden_sizes",
    ),
    row(
        "resnet-bottleneck-width",
        config({**RESNET, "hidden_sizes": [16, 30]}),
        ModelConfigError,
        "hidden_sizes",
        "config.json: field hidden_sizes: bottleneck widths must be multiples of 4",
    ),
    row(
        "resnet-image-too-small",
        config({**RESNET, "image_size": 7}),
        ModelConfigError,
        "image_size",
        "config.json: field image_size 7 is too small for 2 stages",
    ),
    row(
        "mlp-seq-len",
        config({"model_type": "mlp", "layer_widths": [2, 2]}, seq_len=4),
        ModelConfigError,
        None,
        "config.json: an mlp has no sequence length to set",
    ),
    row(
        "mlp-one-width",
        config({"model_type": "mlp", "layer_widths": [784]}),
        ModelConfigError,
        "layer_widths",
        "config.json: field layer_widths needs at least an input and an output width",
    ),
]

ZOO_SECTION = [
    row(
        "unknown-zoo-model-named-up-front",
        lambda: check_zoo_model("mamba"),
        UnknownNameError,
        None,
        f"unknown zoo model 'mamba'; known: {ZOO}",
    ),
    row(
        "unknown-zoo-model",
        section({**SECTION, "name": "mamba"}),
        UnknownNameError,
        None,
        f"params.yaml: model: unknown zoo model 'mamba'; known: {ZOO}",
    ),
    row(
        "name-not-text",
        section({**SECTION, "name": 3}),
        ModelConfigError,
        "name",
        "params.yaml: model: field name must be a string, got 3",
    ),
    row(
        "name-missing",
        section({**SECTION, "name": None}),
        ModelConfigError,
        "name",
        f"params.yaml: model: missing field name (the zoo model: one of {ZOO})",
    ),
    row(
        "t5-1x-activation-missing",
        section({**without(T5, "name"), "decoder_num_hidden_layers": 2}, family="t5", release="1.9"),
        ModelConfigError,
        "encoder_nonlinearity",
        "params.yaml: model: missing field encoder_nonlinearity (one of relu, gelu, reglu, geglu, swiglu)",
    ),
    row(
        "t5-shared-embedding-two-vocabularies",
        section({**T5, "tgt_vocab_size": 90}),
        ModelConfigError,
        "share_encoder_decoder_embedding",
        "params.yaml: model: contradictory fields: share_encoder_decoder_embedding needs one vocabulary, but "
        "src_vocab_size gives 100 tokens and tgt_vocab_size 90",
    ),
    row(
        "t5-tied-encoder-decoder",
        section({**T5, "tie_encoder_decoder": True}),
        UnsupportedModelError,
        "tie_encoder_decoder",
        "params.yaml: model: field tie_encoder_decoder = true: the zoo's T5 refuses it (tied encoder and decoder "
        "weights are not implemented); set it false to plan",
    ),
    row(
        "t5-positions-not-modelled",
        section({**T5, "position_embedding_type": "rotary"}),
        UnsupportedModelError,
        "position_embedding_type",
        "params.yaml: model: field position_embedding_type = 'rotary': T5 with rotary positions is not modelled; "
        "relative, fixed, learned_absolute or null are",
    ),
    row(
        "t5-length-beyond-positions",
        section(T5, target_len=17),
        ModelConfigError,
        "tgt_max_position_embeddings",
        "params.yaml: model: the tgt sequence length must be an integer in 1..tgt_max_position_embeddings (16), got 17",
    ),
    row(
        "target-length-of-one-sequence",
        section(SECTION, target_len=8),
        ModelConfigError,
        None,
        "params.yaml: model: gpt2 has one sequence; a target length applies to encoder-decoder models "
        "(t5, transformer)",
    ),
    row(
        "zoo-preference-training",
        section({**SECTION, "name": "dpo"}),
        UnsupportedModelError,
        "name",
        "params.yaml: model: model 'dpo' trains its policy_model against a frozen copy of it that runs forward only, "
        "on the chosen and on the rejected sequence of each sample; csconform does not model frozen layers, so "
        "neither the work per sample nor what weight streaming moves would be right",
    ),
    row(
        "sinks-without-window",
        section({**SECTION, "attention_sink_tokens": 4}),
        ModelConfigError,
        "attention_sink_tokens",
        "params.yaml: model: field attention_sink_tokens needs attention_sliding_window_length: sinks are the first "
        "tokens every query of a sliding window also attends to",
    ),
    row(
        "vit-image-not-patched",
        section({**VIT, "image_size": [30, 32]}),
        ModelConfigError,
        None,
        "params.yaml: model: contradictory fields: image_size [30, 32] is not a multiple of patch_size [8, 8]",
    ),
    row(
        "vit-size-not-a-pair",
        section({**VIT, "patch_size": [8]}),
        ModelConfigError,
        "patch_size",
        "params.yaml: model: field patch_size must be [height, width], got [8]",
    ),
    row(
        "vit-too-many-positions",
        section({**VIT, "image_size": [4096, 4096], "patch_size": [1, 1]}),
        ModelConfigError,
        "image_size",
        f"params.yaml: model: image_size and patch_size give 16777217 positions, more than {MAX_SEQUENCE}",
    ),
    row(
        "vit-position-type",
        section({**VIT, "position_embedding_type": "alibi"}),
        ModelConfigError,
        "position_embedding_type",
        "params.yaml: model: field position_embedding_type 'alibi': a vision transformer's positions are learned, "
        "fixed or null",
    ),
    row(
        "vit-sequence",
        section(VIT, seq_len=16),
        ModelConfigError,
        "image_size",
        "params.yaml: model: seq_len 16 is not the 17 positions that image_size and patch_size give (the patches "
        "and the class token)",
    ),
    row(
        "image-size-missing",
        section({**DIT, "vae": {"latent_channels": 4}}),
        ModelConfigError,
        "vae.latent_size",
        "params.yaml: model: missing field vae.latent_size ([height, width])",
    ),
    row(
        "dit-latent-not-patched",
        section({**DIT, "patch_size": [3, 3]}),
        ModelConfigError,
        None,
        "params.yaml: model: contradictory fields: latent_size [16, 16] is not a multiple of patch_size [3, 3]",
    ),
    row(
        "dit-patch-not-square",
        section({**DIT, "patch_size": [4, 2]}),
        UnsupportedModelError,
        "patch_size",
        "params.yaml: model: field patch_size [4, 2]: the regression head's transposed convolution over non-square "
        "patches is not modelled",
    ),
    row(
        "dit-gated-mlp",
        section({**DIT, "nonlinearity": "geglu"}),
        UnsupportedModelError,
        "nonlinearity",
        "params.yaml: model: field nonlinearity = 'geglu': gated MLPs in a DiT are not modelled",
    ),
    row(
        "dit-sequence",
        section(DIT, seq_len=17),
        ModelConfigError,
        None,
        "params.yaml: model: seq_len 17 is not the 16 patches that latent_size and patch_size give",
    ),
    row(
        "fc-mnist-seq-len",
        section({"name": "fc_mnist", "hidden_sizes": [20]}, seq_len=8),
        ModelConfigError,
        None,
        "params.yaml: model: fc_mnist has no sequence length to set",
    ),
    row(
        "feature-not-modelled",
        section({**SECTION, "cross_attention_layers": [1]}),
        UnsupportedModelError,
        "cross_attention_layers",
        "params.yaml: model: field cross_attention_layers = [1]: cross-attention layers are not modelled",
    ),
    row(
        "norm-type-not-modelled",
        section({**SECTION, "norm_type": "batchnorm"}),
        UnsupportedModelError,
        "norm_type",
        "params.yaml: model: field norm_type 'batchnorm' is not modelled (known: layernorm, rmsnorm, "
        "biasless-layernorm)",
    ),
    row(
        "unknown-position-type",
        section({**SECTION, "position_embedding_type": "sinusoid"}),
        ModelConfigError,
        "position_embedding_type",
        "params.yaml: model: field position_embedding_type must be one of learned, fixed, relative, rotary, alibi "
        "or null, got 'sinusoid'",
    ),
    row(
        "attention-width-not-split-by-heads",
        section({**SECTION, "attention_inner_dim": 66}),
        ModelConfigError,
        "num_heads",
        "params.yaml: model: contradictory fields: attention_inner_dim (66) must be a multiple of num_heads (4)",
    ),
    row(
        "key-value-groups-do-not-divide",
        section({**MULTIQUERY, "extra_attention_params": {"num_kv_groups": 3}}),
        ModelConfigError,
        "extra_attention_params.num_kv_groups",
        "params.yaml: model: field extra_attention_params.num_kv_groups (3) must divide num_heads (4)",
    ),
    row(
        "top-k-beyond-experts",
        section({**SECTION, "moe": {"num_experts": 2, "top_k": 3}}),
        ModelConfigError,
        "moe.top_k",
        "params.yaml: model: contradictory fields: moe.top_k (3) exceeds moe.num_experts (2)",
    ),
    row(
        "qk-norm-of-another-type",
        section({**SECTION, "attention_qk_norm_layer": "rmsnorm"}),
        UnsupportedModelError,
        "attention_qk_norm_layer",
        "params.yaml: model: field attention_qk_norm_layer: a QK norm of another type than the model's norm is not "
        "modelled",
    ),
    row(
        "dpr-encoders",
        section({"name": "dpr", "q_encoder": {}}),
        ModelConfigError,
        "q_encoder",
        "params.yaml: model: DPR needs q_encoder and ctx_encoder, or one encoder",
    ),
    row(
        "zoo-seq-len-beyond-positions",
        section(SECTION, seq_len=33),
        ModelConfigError,
        None,
        "params.yaml: model: seq_len must be an integer in 1..max_position_embeddings (32), got 33",
    ),
]

NAMED_MODELS = [
    row(
        "layers-without-a-config",
        lambda: ModelSpec("x", (Layer("dense", 4, 4),), None, 8, 20.0, "test").at_seq_len(4),
        ModelConfigError,
        None,
        "seq_len applies to models built from a config; build the layers at that length",
    ),
    row(
        "unknown-named-model",
        lambda: canonical_name("gpt5"),
        UnknownNameError,
        None,
        f"unknown model 'gpt5'; known models: {', '.join(ZOO_NAMES)}",
    ),
    row(
        "named-model-without-sequence",
        lambda: get_model("resnet50", seq_len=8),
        InvalidInputError,
        None,
        "model resnet50 has no sequence length to set",
    ),
]


@pytest.mark.parametrize(("read", "kind", "key", "message"), FIELDS + CONFIG + FAMILY + ZOO_SECTION + NAMED_MODELS)
def test_each_refusal_reads(read, kind, key, message):
    error = refusal(read)
    assert type(error) is kind and getattr(error, "key", None) == key and str(error) == message
