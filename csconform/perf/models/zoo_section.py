"""Model Zoo ``model:`` sections read into the performance model's description.

A Cerebras Model Zoo params file describes its model in a ``model:`` section (the top-level
``model`` of the 1.x layout, ``trainer.init.model`` since 2.x) with the zoo's own key names:
``hidden_size``, ``num_hidden_layers``, ``num_heads``, ``filter_size``, ``vocab_size``,
``max_position_embeddings``, ``position_embedding_type``, ``share_embedding_weights``,
``use_projection_bias_in_attention`` (Q, K, V biases), ``use_ffn_bias_in_attention`` (the output
projection's bias), ``use_ffn_bias``, ``nonlinearity`` (``swiglu`` and the other GLUs make the MLP
gated), ``attention_module: multiquery_attention`` with ``extra_attention_params.num_kv_groups``,
``norm_type`` (1.x: ``use_rms_norm``, ``use_biasless_norm``), ``moe: {num_experts, top_k}``, ...

The zoo builds these families from a few model classes, and the class decides the defaults:

* the GPT-2 class (``gpt2``, ``gpt3``, ``llama``, ``mistral``, ``mixtral``, ``mpt``, ``gemma2``, ...):
  learned positions, biases everywhere, a LayerNorm before attention and one before the MLP (and one after
  each with ``norm_first_sandwich``, as Gemma 2 sets), a final norm, an LM head tied to the token
  embedding (``share_embedding_weights``, with ``use_bias_in_output``);
* the GPT-J class (``gptj``, ``gpt-neox``, ``falcon``): rotary positions, attention and MLP in
  parallel from one norm (two with ``use_untied_layer_norm``, as NeoX and Falcon-40B use), no MLP
  bias unless ``use_ffn_bias``;
* the BERT classes (``bert``; RoBERTa files use it too; ``bert/classifier``,
  ``bert/token_classifier``, ``bert/extractive_summarization``, 1.x's ``bert/qa``): learned positions, segment
  embeddings (``num_segments``, by default 2, none with ``disable_nsp``; 1.x's pre-training model does not
  read the key), an embedding
  LayerNorm, post-LN blocks, and the pre-training heads (pooler and next-sentence prediction unless
  ``disable_nsp``; the masked-LM transform, LayerNorm and decoder tied to the embedding) or the
  fine-tuning head the name says;
* the ViT class (``vision_transformer``, ``vit_classification``): an image of ``image_size`` cut into
  ``patch_size`` patches, each projected to the model width (a convolution whose stride is its
  kernel, which is a dense layer over the patch's pixels), a class token prepended
  (``prepend_cls_token``), a learned table of one position per patch and class token, pre-LN
  encoder blocks with a final LayerNorm, and a classifier over ``num_classes`` on the class token;
* ``dit`` (a diffusion transformer over the VAE's latents, which the input pipeline computes): the
  latent image cut into patches as in a ViT (no class token), a timestep embedding (an MLP over
  sinusoids) and a label embedding that condition every block through adaptive LayerNorms (a scale
  and a shift, each a dense layer over the conditioning vector) and two residual gates, a final
  adaptive LayerNorm and a transposed convolution back to the latent's channels;
* the T5 class (``t5``, and ``transformer``, the original encoder-decoder, which the zoo builds from
  the same class): an encoder over the source sequence and a decoder over the target whose blocks
  also attend to the encoder's output, one relative-position bias per stack, no attention or FFN
  biases unless asked, RMSNorms (1.x: LayerNorms unless ``use_t5_layer_norm``), the LM head tied to
  the shared token table; the two sequence lengths are ``seq_len`` (source) and ``target_len``;
* ``fc_mnist``: ``depth`` layers of ``hidden_size`` (or ``hidden_sizes``) from 784 inputs to 10.

Absent keys take the zoo's defaults (2.x's, or 1.x's with ``release="1.x"`` where they differ); keys
that change the architecture in ways not modelled here (cross-attention layers, extra input
vocabulary, other norm types, sandwich norms in the GPT-J class, frozen layers) are refused with an
:class:`UnsupportedModelError` naming the key; keys that do not change the architecture (dropout,
initializers, loss scaling, precision, muP scales, logit soft-capping) are not read. A mixture of
experts counts every expert in ``params`` and the routed ``top_k`` (plus shared experts) in
``active_params``; weight streaming moves all of them. DPO is refused: its frozen reference copy
runs forward only, which the performance model does not describe.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from csconform.arguments import is_integer
from csconform.errors import CsConformError, UnknownNameError, UnsupportedModelError
from csconform.perf.models.fields import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, Fields, shown
from csconform.perf.models.layer import Layer, total_params
from csconform.perf.models.model_spec import DEFAULT_BATCH, ModelSpec
from csconform.perf.models.transformer import (
    MLP,
    Attention,
    Transformer,
    blocks,
    classifier,
    encoder_decoder,
    lm_head,
    masked_lm_head,
    moe_note,
    pooler,
    trunk,
)

ZOO_FAMILIES: dict[str, str] = {
    "gpt2": "gpt2",
    "gpt3": "gpt2",
    "llama": "gpt2",
    "LlamaModel": "gpt2",
    "mistral": "gpt2",
    "mixtral": "gpt2",
    "gptj": "gptj",
    "gpt-neox": "gptj",
    "gpt_neox": "gptj",
    "neox": "gptj",
    "falcon": "gptj",
    "btlm": "gpt2",
    "jais": "gpt2",
    "starcoder": "gpt2",
    "santacoder": "gpt2",
    "bloom": "gpt2",
    "gemma2": "gpt2",
    "mpt": "gpt2",
    "bert": "bert",
    "esm2": "bert",
    "dpr": "dpr",
    "roberta": "bert",
    "bert/classifier": "bert",
    "bert/token_classifier": "bert",
    "bert/extractive_summarization": "bert",
    "bert/qa": "bert",
    "vision_transformer": "vit",
    "vit_classification": "vit",
    "dit": "dit",
    "fc_mnist": "fc_mnist",
    "t5": "t5",
    "transformer": "t5",
}
"""Zoo model names (a section's ``name:``, or the model folder of a 1.x file) -> the model class that builds them."""
PRETRAINING = ("bert", "roberta", "esm2")
"""The BERT-class models whose heads are the pre-training heads (masked LM, and NSP unless disable_nsp)."""
PREFERENCE_TRAINING = ("dpo",)
"""Zoo models that train a ``policy_model`` against a frozen copy of it (not modelled: see the refusal)."""
T5_NONLINEARITIES = ("relu", "gelu", "reglu", "geglu", "swiglu")
T5_POSITIONS = ("relative", "fixed", "learned_absolute", None)
"""What the zoo's T5 class builds: its activations, and the positions modelled (2.x also accepts rotary,
which its embedding layer cannot build without a rotary_dim the class never passes, and ALiBi)."""
GLU = ("liglu", "geglu", "reglu", "swiglu", "swiglu_clamped")
NORM_TYPES = {"layernorm": ("layer", True), "rmsnorm": ("rms", False), "biasless-layernorm": ("layer", False)}
POSITIONS = ("learned", "fixed", "relative", "rotary", "alibi", None)
MNIST_INPUTS, MNIST_CLASSES = 784, 10
TRAINER_LAYOUT = (2, 4)
"""The first release of the trainer layout; the T5 runs of the releases before it (1.x to 2.3.1, the flat
layout) set the position tables' lengths from the input's when the model section gives none."""


def zoo_model(zoo_name: str) -> str | None:
    """The key of :data:`ZOO_FAMILIES` that ``zoo_name`` names (spelt any way the zoo does), or None."""
    key = next((k for k in ZOO_FAMILIES if _canonical(k) == _canonical(zoo_name)), None)
    if key is None and ZOO_FAMILIES.get(_base(zoo_name), "bert") != "bert":
        key = _base(zoo_name)  # a decoder's sub-folder (1.x gptj/fine_tuning/continuous_pretraining) is the decoder
    return key


def check_zoo_model(zoo_name: str) -> str:
    """``zoo_name`` if the performance model knows it (or refuses it for a reason of its own, as DPO);
    an option naming a model up front (``validate --model-family``) is checked here."""
    if zoo_model(zoo_name) is None and _canonical(zoo_name) not in PREFERENCE_TRAINING:
        raise UnknownNameError(f"unknown zoo model {shown(zoo_name)}; known: {', '.join(ZOO_FAMILIES)}")
    return zoo_name


def model_from_zoo_section(
    model: Mapping[str, Any],
    *,
    family: str | None = None,
    source: str = "model",
    seq_len: int | None = None,
    name: str | None = None,
    release: str | None = None,
    tensorflow: bool = False,
    target_len: int | None = None,
) -> ModelSpec:
    """The model a Model Zoo ``model:`` section describes (see the module docstring).

    ``family`` is the zoo model name when the section has no ``name:`` (1.x files: pass the model
    folder; a section's own ``name:`` wins); ``source`` names the section in every error
    (``"params.yaml: trainer.init.model"``); ``seq_len`` is the sequence length to plan at (default:
    ``max_position_embeddings``), the encoder's (source) length for an encoder-decoder, whose decoder
    runs over ``target_len`` (default: ``tgt_max_position_embeddings``); ``release`` ("1.9", "2.10",
    ...; default the newest) picks the zoo's defaults where releases differ; ``tensorflow`` builds a
    BERT-class model as the 1.x TensorFlow zoo's ``BertModel`` does (:func:`_bert`)."""
    f = Fields(model, source)
    stated = model.get("name")
    if stated is not None and not isinstance(stated, str):
        raise f.error(f"field name must be a string, got {shown(stated)}", "name")
    zoo_name = stated or family
    if zoo_name is None:
        raise f.error(f"missing field name (the zoo model: one of {', '.join(ZOO_FAMILIES)})", "name")
    if _canonical(zoo_name) in PREFERENCE_TRAINING:
        raise f.error(
            f"model {shown(zoo_name)} trains its policy_model against a frozen copy of it that runs forward only, "
            "on the chosen and on the rejected sequence of each sample; csconform does not model frozen layers, so "
            "neither the work per sample nor what weight streaming moves would be right",
            "name",
            UnsupportedModelError,
        )
    key = zoo_model(zoo_name)
    if key is None:
        raise UnknownNameError(f"{source}: unknown zoo model {shown(zoo_name)}; known: {', '.join(ZOO_FAMILIES)}")
    # frozen layers run forward (and backward, for what they feed) but get no gradient step: every reader's
    # count and cost assume all layers train
    _refuse_unless(f, "freeze", None, "frozen layers")
    major = re.search(r"\d+", str(release)) if release is not None else None
    first = major is not None and major.group() == "1"  # "1.9", "Release_1.9.1", "R_1.7.0"
    line = re.search(r"(\d+)\.(\d+)", str(release)) if release is not None else None
    flat = first or (line is not None and (int(line[1]), int(line[2])) < TRAINER_LAYOUT)
    model_class = ZOO_FAMILIES[key]
    if target_len is not None and model_class != "t5":
        raise f.error(f"{key} has one sequence; a target length applies to encoder-decoder models (t5, transformer)")
    if model_class == "fc_mnist":
        if seq_len is not None:
            raise f.error("fc_mnist has no sequence length to set")
        layers = _fc_mnist(f)
    elif model_class == "bert":
        layers = _bert(f, key, seq_len, first, tensorflow)
    elif model_class == "dpr":
        layers = _dpr(f, seq_len)
    elif model_class == "vit":
        layers = _vit(f, seq_len)
    elif model_class == "dit":
        layers = _dit(f, seq_len)
    elif model_class == "t5":
        layers = _t5(f, seq_len, target_len, first, flat)
    else:
        layers = _decoder(f, model_class, seq_len)
    planned: int | None = None
    longest: int | None = None
    if model_class == "t5":  # planned at the encoder's (source) length; the notes give the decoder's
        longest, planned = _t5_length(f, "src", seq_len, flat)
    elif model_class != "fc_mnist":
        planned, longest = max(layer.tokens for layer in layers), _longest(f, model_class, layers)
    return ModelSpec(
        name=name or key,
        layers=tuple(layers),
        seq_len=planned,
        default_batch=DEFAULT_BATCH,
        published_params=float(total_params(layers)),
        source=f"Model Zoo model section ({source})",
        family=key,
        max_seq_len=longest,
        notes=tuple(f.notes),
        config=dict(model),
        rebuild=functools.partial(_rebuild, dict(model), key, source, name, release, tensorflow, target_len),
    )


def position_table_length(model: Mapping[str, Any], zoo_name: str) -> int | None:
    """The longest sequence a section's positions cover where they come from a table the zoo builds
    (learned positions, or fixed sinusoids, which it also keeps as ``max_position_embeddings`` rows);
    None where positions need no table (rotary, ALiBi, relative buckets) or the section leaves it open."""
    key = zoo_model(zoo_name)
    if key is None or ZOO_FAMILIES[key] not in ("gpt2", "gptj", "bert"):
        return None
    try:
        kind = _position_type(Fields(model, "model"), "rotary" if ZOO_FAMILIES[key] == "gptj" else "learned")
    except CsConformError:
        return None  # the plan names what is wrong with the key
    longest: Any = model.get("max_position_embeddings")
    return int(longest) if kind in ("learned", "fixed") and is_integer(longest) and longest > 0 else None


def _canonical(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _base(name: str) -> str:
    """The model folder a name sits in (``bert/classifier`` -> ``bert``)."""
    return _canonical(name).split("/")[0]


def _rebuild(
    model: dict[str, Any],
    family: str,
    source: str,
    name: str | None,
    release: str | None,
    tensorflow: bool,
    target_len: int | None,
    seq_len: int,
) -> ModelSpec:
    return model_from_zoo_section(
        model,
        family=family,
        source=source,
        seq_len=seq_len,
        name=name,
        release=release,
        tensorflow=tensorflow,
        target_len=target_len,
    )


# --- reading keys ---------------------------------------------------------------------------------


def _size(f: Fields, key: str, quantity: str, default: int | None, limit: int = MAX_WIDTH) -> int:
    """A size key; an absent one takes the zoo's default, and the notes say so."""
    if f.config.get(key) is None and default is not None:
        f.notes.append(f"{key} absent: the Model Zoo's default {default}")
    return f.integer(quantity, (key,), default=default, limit=limit)


def _sub(f: Fields, key: str, aliases: Sequence[str] = ()) -> Fields:
    """A nested mapping (``moe``, ``extra_attention_params``) with keys named by their full path."""
    for spelled in (key, *aliases):
        if f.config.get(spelled) is not None:
            return Fields(f.config[spelled], f.source, prefix=f"{f.prefix}{spelled}.")
    return Fields({}, f.source, prefix=f"{f.prefix}{key}.")


def _refuse_unless(f: Fields, key: str, modelled: Any, why: str) -> None:
    value = f.config.get(key, modelled)
    if value not in (modelled, None) and value != []:
        raise f.error(f"field {f.key(key)} = {shown(value)}: {why} are not modelled", key, UnsupportedModelError)


def _norm(f: Fields) -> tuple[str, bool]:
    """(norm kind, shift) from ``norm_type``, or 1.x's ``use_rms_norm`` / ``use_biasless_norm``."""
    if f.flag("use_rms_norm", False):
        return "rms", False
    if f.flag("use_biasless_norm", False):
        return "layer", False
    return _norm_type(f, "layernorm")


def _norm_type(f: Fields, default: str) -> tuple[str, bool]:
    """(norm kind, shift) from ``norm_type`` (absent: ``default``)."""
    norm = f.config.get("norm_type", default)
    if not isinstance(norm, str) or norm.lower() not in NORM_TYPES:
        raise f.error(
            f"field norm_type {shown(norm)} is not modelled (known: {', '.join(NORM_TYPES)})",
            "norm_type",
            UnsupportedModelError,
        )
    return NORM_TYPES[norm.lower()]


def _position_type(f: Fields, default: str) -> str | None:
    if not f.flag("use_position_embedding", True):  # 1.x's way to turn positions off
        return None
    value = f.config.get("position_embedding_type", default)
    value = value.lower() if isinstance(value, str) else value
    if value not in POSITIONS:
        raise f.error(
            "field position_embedding_type must be one of learned, fixed, relative, rotary, alibi or null, "
            f"got {shown(value)}",
            "position_embedding_type",
        )
    return value


def _positions(f: Fields, kind: str | None, rows: int) -> tuple[int, int]:
    """(rows of a learned position table, relative-position buckets): trainable ALiBi slopes are one bucket."""
    if kind == "learned":
        offset = f.integer("position embedding offset", ("position_embedding_offset",), default=0, minimum=0)
        return rows + offset, 0
    if kind == "relative":
        return 0, f.integer("relative attention buckets", ("num_relative_attention_buckets",), default=32)
    if kind == "alibi" and f.flag("alibi_trainable_slopes", False):
        return 0, 1  # one trainable slope per head
    return 0, 0


def _attention(f: Fields, width: int, heads: int, layers: int) -> Attention:
    inner = f.integer("attention width", ("attention_inner_dim",), default=width, limit=MAX_WIDTH)
    if inner % heads:
        raise f.error(
            f"contradictory fields: attention_inner_dim ({inner}) must be a multiple of num_heads ({heads})",
            "num_heads",
        )
    groups = _kv_groups(f, heads)
    window = f.integer("sliding window", ("attention_sliding_window_length",), default=0, minimum=0, limit=MAX_SEQUENCE)
    windowed = None
    if window and f.flag("sliding_window_every_other_decoder_layer", False):
        pattern = f.choice(
            "sliding_window_every_other_decoder_layer_pattern",
            "full_attention_first",
            ("full_attention_first", "sliding_window_first"),
        )
        windowed = tuple(range(1 if pattern == "full_attention_first" else 0, layers, 2))
    sinks = f.integer("attention sink tokens", ("attention_sink_tokens",), default=0, minimum=0, limit=MAX_SEQUENCE)
    if sinks and not window:
        raise f.error(
            "field attention_sink_tokens needs attention_sliding_window_length: sinks are the first tokens every "
            "query of a sliding window also attends to",
            "attention_sink_tokens",
        )
    if window:
        where = "every block" if windowed is None else "every other block"
        sunk = f" and the first {sinks} tokens (attention sinks)" if sinks else ""
        f.notes.append(f"sliding-window attention: each query attends to at most {window} keys{sunk} in {where}")
        window += sinks
    qk_norm = f.config.get("attention_qk_norm_layer")
    return Attention(
        heads,
        groups,
        inner // heads,
        f.flag("use_projection_bias_in_attention", True),
        f.flag("use_ffn_bias_in_attention", True),
        window=window,
        windowed_layers=windowed,
        qk_norm=qk_norm is not None,
    )


def _kv_groups(f: Fields, heads: int) -> int:
    """Key/value heads: ``heads``, or ``extra_attention_params.num_kv_groups`` with multi-query attention."""
    module = f.choice("attention_module", "aiayn_attention", ("aiayn_attention", "multiquery_attention"))
    if module != "multiquery_attention":
        return heads
    extra = _sub(f, "extra_attention_params")
    groups = extra.integer("number of key/value groups", ("num_kv_groups",), limit=MAX_WIDTH)
    if groups > heads or heads % groups:
        raise extra.error(
            f"field {extra.key('num_kv_groups')} ({groups}) must divide num_heads ({heads})", "num_kv_groups"
        )
    return groups


def _mlp(f: Fields, model_class: str) -> MLP:
    width = _size(f, "filter_size", "MLP width", 3072, limit=4 * MAX_WIDTH)
    nonlinearity = f.config.get("nonlinearity", "gelu")
    gated = isinstance(nonlinearity, str) and nonlinearity.lower() in GLU
    bias = f.flag("use_ffn_bias", model_class != "gptj")
    moe = _sub(f, "moe", ("moe_params",))
    experts = moe.integer("number of experts", ("num_experts",), default=0, minimum=0, limit=2**16)
    shared = moe.integer("number of shared experts", ("num_shared_experts",), default=0, minimum=0, limit=2**16)
    if experts + shared <= 1:
        return MLP(width, gated=gated, bias=bias)
    top_k = moe.integer("experts per token", ("top_k",), default=1, limit=2**16)
    if top_k > experts:
        raise moe.error(
            f"contradictory fields: {moe.key('top_k')} ({top_k}) exceeds {moe.key('num_experts')} ({experts})", "top_k"
        )
    return MLP(
        width,
        gated=gated,
        bias=bias,
        experts=experts,
        experts_per_token=top_k,
        shared_experts=shared,
        router_bias=moe.flag("router_use_bias", False),
    )


# --- the model classes ------------------------------------------------------------------------------


def _decoder(f: Fields, model_class: str, seq_len: int | None) -> list[Layer]:
    """The zoo's GPT-2 class (gpt2, gpt3, llama, mistral, mixtral) and GPT-J class (gptj, neox, falcon)."""
    _refuse_unless(f, "cross_attention_layers", [], "cross-attention layers")
    if model_class != "gpt2":  # the zoo's GPT-J decoder layer has no sandwich norms
        _refuse_unless(f, "norm_first_sandwich", False, "sandwich norms outside the GPT-2 class")
    _refuse_unless(f, "num_extra_input_vocab_tokens", 0, "extra input vocabulary tokens")
    width = _size(f, "hidden_size", "model width", 768)
    layers = _size(f, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
    heads = _size(f, "num_heads", "number of attention heads", 12)
    vocab = _size(f, "vocab_size", "vocabulary size", 50257, limit=2**24)
    longest = _size(f, "max_position_embeddings", "maximum sequence length", 1024, limit=MAX_SEQUENCE)
    tokens = _tokens(f, seq_len, longest)
    norm, shift = _norm(f)
    kind = _position_type(f, "learned" if model_class == "gpt2" else "rotary")
    attention = _attention(f, width, heads, layers)
    table, buckets = _positions(f, kind, longest)
    model_norm = "rmsnorm" if norm == "rms" else "layernorm" if shift else "biasless-layernorm"
    if attention.qk_norm and str(f.config.get("attention_qk_norm_layer")).lower() != model_norm:
        raise f.error(
            "field attention_qk_norm_layer: a QK norm of another type than the model's norm is not modelled",
            "attention_qk_norm_layer",
            UnsupportedModelError,
        )
    mlp = _mlp(f, model_class)
    t = Transformer(
        layers,
        width,
        vocab,
        tokens,
        attention,
        mlp,
        norm=norm,
        norm_bias=shift,
        block_norms=2 if model_class == "gpt2" or f.flag("use_untied_layer_norm", False) else 1,
        post_norms=model_class == "gpt2" and f.flag("norm_first_sandwich", False),
        embedding_norm=f.flag("embedding_layer_norm", False),
        position_table=table,
        relative_position_buckets=buckets,
    )
    tied = f.flag("share_embedding_weights", True)
    f.notes.append("head: the LM head" + (" (tied to the token embedding)" if tied else " (its own weights)"))
    result = trunk(t) + lm_head(t, tied=tied, bias=f.flag("use_bias_in_output", False))
    if mlp.experts > 1:
        f.notes.append(moe_note(result, mlp.experts, mlp.experts_per_token))
    return result


def _bert(f: Fields, name: str, seq_len: int | None, first_release: bool, tensorflow: bool) -> list[Layer]:
    """The zoo's BERT pre-training model and its fine-tuning heads; with ``tensorflow``, as the 1.x
    TensorFlow zoo builds them (``tf/bert/BertModel.py`` and ``fine_tuning/<task>/Bert*Model.py``,
    1.6.0-1.8.0): no default vocabulary (the caller reads it from the input), segment embeddings only
    with ``use_segment_embedding``, one LayerNorm after the embeddings (after the encoder with
    ``use_pre_normalization``), biases in every head, the classifier over ``num_cls_classes`` and
    extractive summarization's one logit per sentence (``MultipleCLSLayer(output_size=1)``)."""
    width = _size(f, "hidden_size", "model width", 768)
    layers = _size(f, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
    heads = _size(f, "num_heads", "number of attention heads", 12)
    vocab = _size(f, "vocab_size", "vocabulary size", None if tensorflow else 50257, limit=2**24)
    if tensorflow:
        _refuse_unless(f, "embedding_size", width, "factorized embeddings (an embedding_size other than hidden_size)")
    kind = _position_type(f, "learned")
    longest = f.integer("maximum sequence length", ("max_position_embeddings",), limit=MAX_SEQUENCE)
    tokens = _tokens(f, seq_len, longest)
    norm, shift = _norm(f)
    pretraining = name in PRETRAINING
    nsp = pretraining and not f.flag("disable_nsp", False)
    segments_default = 2 if (nsp or not pretraining) else 0  # the zoo builds no segment table without NSP
    if tensorflow:  # BertModel: num_segments=2 if use_segment_embedding else None, NSP or not
        segments = 2 if f.flag("use_segment_embedding", False) else 0
    elif first_release and pretraining:  # 1.7-1.9 build 2 segments (none with disable_nsp) and never read the key
        segments = segments_default
        if f.config.get("num_segments") is not None:
            f.notes.append(f"num_segments is not read by the 1.x pre-training model: {segments} segment embeddings")
    else:
        segments = f.integer("number of segments", ("num_segments",), default=segments_default, minimum=0, limit=2**16)
    rows = longest
    if f.flag("mask_padding_in_positional_embed", False):
        rows += f.integer("pad token id", ("pad_token_id",), default=0, minimum=0)
    ffn_bias = f.flag("use_ffn_bias", True)
    head_bias = tensorflow or ffn_bias  # the TensorFlow heads' dense layers always have biases
    pre_norm = tensorflow and f.flag("use_pre_normalization", False)
    table, buckets = _positions(f, kind, rows)
    t = Transformer(
        layers,
        width,
        vocab,
        tokens,
        _attention(f, width, heads, layers),
        MLP(_size(f, "filter_size", "MLP width", 3072, limit=4 * MAX_WIDTH), gated=False, bias=ffn_bias),
        norm=norm,
        norm_bias=shift,
        token_types=segments,
        embedding_norm=not pre_norm if tensorflow else f.flag("embedding_layer_norm", True),
        final_norm=pre_norm if tensorflow else f.flag("use_final_layer_norm", False),
        position_table=table,
        relative_position_buckets=buckets,
    )
    body = trunk(t)
    if name == "bert/classifier":
        key, default = ("num_cls_classes", 2) if tensorflow else ("num_labels", None)
        labels = f.integer("number of labels", (key,), default=default, limit=2**24)
        f.notes.append(f"heads counted: the pooler and a classifier over {labels} labels")
        return body + pooler(t, head_bias) + classifier(t, labels)
    if name == "bert/token_classifier":
        classes = f.integer("number of classes", ("num_classes",), limit=2**24)
        f.notes.append(f"heads counted: a classifier over {classes} classes at every token; no pooler")
        return body + classifier(t, classes, tokens=tokens)
    if name == "bert/qa":
        f.notes.append("heads counted: a start/end classifier (2 outputs) at every token; no pooler")
        return body + classifier(t, 2, tokens=tokens)
    if name == "bert/extractive_summarization" and tensorflow:
        f.notes.append("heads counted: one logit per sentence (its FLOPs counted at every token); no pooler")
        return body + classifier(t, 1, tokens=tokens)
    if name == "bert/extractive_summarization":
        labels = f.integer("number of labels", ("num_labels",), default=2, limit=2)
        f.notes.append(
            f"heads counted: a classifier over {labels} labels (its FLOPs counted at every token, an upper bound "
            "for the sentence tokens it reads); no pooler"
        )
        return body + classifier(t, labels, bias=f.flag("use_cls_bias", True), tokens=tokens)
    tied = f.flag("share_embedding_weights", True)
    mlm = masked_lm_head(
        t,
        tied=tied,
        transform_bias=tensorflow or f.flag("use_ffn_bias_in_mlm", True),
        bias=tensorflow or f.flag("use_output_bias_in_mlm", True),
    )
    if not nsp:
        f.notes.append(
            "heads counted: the masked-LM head (transform, LayerNorm, decoder); no pooler, no NSP (disable_nsp)"
        )
        return body + mlm
    classes = f.integer(
        "number of NSP classes", ("num_cls_classes" if tensorflow else "num_classes",), default=2, limit=2**16
    )
    f.notes.append(
        "heads counted: the pooler, next-sentence prediction and the masked-LM head (transform, LayerNorm, decoder)"
    )
    return body + pooler(t, head_bias) + classifier(t, classes, name="nsp", bias=head_bias) + mlm


def _dpr(f: Fields, seq_len: int | None) -> list[Layer]:
    """DPR: a question and a context encoder (or one shared ``encoder``), each a BERT encoder without
    segment embeddings, with a pooler only when ``pooler_type`` is ``ffn_pooler`` (2.x's DPRModelConfig)."""
    pooled = f.choice("pooler_type", "cls", ("mean", "cls", "ffn_pooler")) == "ffn_pooler"
    names = [n for n in ("q_encoder", "ctx_encoder", "encoder") if f.config.get(n) is not None]
    if names not in (["q_encoder", "ctx_encoder"], ["encoder"]):
        raise f.error("DPR needs q_encoder and ctx_encoder, or one encoder", "q_encoder")
    layers: list[Layer] = []
    for name in names:
        encoder = _sub(f, name)
        width = _size(encoder, "hidden_size", "model width", 768)
        depth = _size(encoder, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
        heads = _size(encoder, "num_heads", "number of attention heads", 12)
        vocab = _size(encoder, "vocab_size", "vocabulary size", 30522, limit=2**24)
        longest = encoder.integer("maximum sequence length", ("max_position_embeddings",), limit=MAX_SEQUENCE)
        segments = encoder.integer("number of segments", ("num_segments",), default=0, minimum=0, limit=2**16)
        t = Transformer(
            depth,
            width,
            vocab,
            _tokens(encoder, seq_len, longest),
            _attention(encoder, width, heads, depth),
            MLP(_size(encoder, "filter_size", "MLP width", 3072, limit=4 * MAX_WIDTH), gated=False, bias=True),
            norm="layer",
            norm_bias=True,
            token_types=segments,
            embedding_norm=True,
            final_norm=False,
            position_table=longest,
        )
        encoder_layers = trunk(t) + (pooler(t, True) if pooled else [])
        layers += [_prefixed(layer, name) for layer in encoder_layers]
        f.notes += encoder.notes
    f.notes.append(
        f"DPR: {' and '.join(names)} counted, each a BERT encoder"
        + (" with a pooler (ffn_pooler)" if pooled else " without a pooler (pooler_type cls or mean)")
    )
    return layers


def _vit(f: Fields, seq_len: int | None) -> list[Layer]:
    """The zoo's vision transformer for classification (ViTClassificationModel): patches, not tokens.
    A sequence length, where a file states one, must be the one the image and the patches give."""
    _refuse_unless(f, "layerscale_value", None, "LayerScale parameters")
    _refuse_unless(f, "interpolate_position_embedding", None, "interpolated position tables")
    width = _size(f, "hidden_size", "model width", 768)
    depth = _size(f, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
    heads = _size(f, "num_heads", "number of attention heads", 12)
    image = _pair(f, "image_size", (224, 224))
    patch = _pair(f, "patch_size", (16, 16))
    patches = _patch_grid(f, "image_size", image, patch)
    channels = f.integer("number of channels", ("num_channels",), default=3, limit=2**16)
    cls = f.flag("prepend_cls_token", True)
    tokens = patches + int(cls)
    if tokens > MAX_SEQUENCE:
        raise f.error(f"image_size and patch_size give {tokens} positions, more than {MAX_SEQUENCE}", "image_size")
    if seq_len is not None and seq_len != tokens:
        raise f.error(
            f"seq_len {shown(seq_len)} is not the {tokens} positions that image_size and patch_size give"
            + (" (the patches and the class token)" if cls else ""),
            "image_size",
        )
    kind = _patch_positions(f, "a vision transformer")
    t = Transformer(
        depth,
        width,
        0,  # no vocabulary: blocks() reads only the width, the tokens and the blocks' choices
        tokens,
        _attention(f, width, heads, depth),
        _mlp(f, "vit"),
        final_norm=f.flag("use_final_layer_norm", True),
    )
    embed = [
        Layer(
            "dense",
            channels * patch[0] * patch[1],
            width,
            patches,
            name="patch_embedding",
            bias=f.flag("use_embed_proj_bias", True),
            group="embeddings",
        )
    ]
    if cls:
        embed.append(Layer("embedding", 1, width, 1, name="cls_token", group="embeddings"))
    if f.flag("use_masked_patches", False):
        embed.append(Layer("embedding", 1, width, 1, name="mask_token", group="embeddings"))
    if kind == "learned":
        embed.append(Layer("embedding", tokens, width, tokens, name="position_embeddings", group="embeddings"))
    if f.flag("use_post_embed_layer_norm", False):
        embed.append(Layer("layer_norm", width, width, tokens, name="embeddings.ln", group="embeddings"))
    head = pooler(t, f.flag("use_ffn_bias", True)) if f.flag("use_encoder_pooler_layer", False) else []
    classes = f.integer("number of classes", ("num_classes",), default=2, limit=2**24)
    pooled = 2 * width if f.flag("use_dinov2_classifier", False) else width  # the class token and the patches' mean
    head.append(
        Layer(
            "dense",
            pooled,
            classes,
            1,
            name="classifier",
            bias=f.flag("use_bias_in_output", True),
            group="head",
            scored=True,
        )
    )
    f.notes.append(
        f"vision transformer: {patches} patches of {patch[0]}x{patch[1]} pixels"
        + (" and a class token" if cls else "")
        + f"; heads counted: {'the pooler and ' if len(head) == 2 else ''}a classifier over {classes} classes"
    )
    return embed + blocks(t) + head


def _dit(f: Fields, seq_len: int | None) -> list[Layer]:
    """The zoo's DiT (adaLN-Zero blocks). The adaptive LayerNorms normalise without parameters of their own
    and modulate elementwise: that work is left out, their dense layers over the one conditioning vector
    a sample has are counted."""
    _refuse_unless(f, "block_type", "adaln_zero", "DiT blocks other than adaln_zero")
    width = _size(f, "hidden_size", "model width", 768)
    depth = _size(f, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
    heads = _size(f, "num_heads", "number of attention heads", 12)
    latents = f if f.config.get("latent_size") is not None else _sub(f, "vae")  # the VAE's output, unless given
    latent = _pair(latents, "latent_size", None)
    channels = (f if f.config.get("latent_channels") is not None else _sub(f, "vae")).integer(
        "latent channels", ("latent_channels",), limit=2**16
    )
    patch = _pair(f, "patch_size", (16, 16))
    patches = _patch_grid(f, "latent_size", latent, patch)
    if patch[0] != patch[1]:
        raise f.error(
            f"field patch_size {list(patch)}: the regression head's transposed convolution over non-square patches "
            "is not modelled",
            "patch_size",
            UnsupportedModelError,
        )
    if seq_len is not None and seq_len != patches:
        raise f.error(f"seq_len {shown(seq_len)} is not the {patches} patches that latent_size and patch_size give")
    for key in ("nonlinearity", "encoder_nonlinearity"):  # 2.x's trainer classes read the first, 2.0's the second
        if str(f.config.get(key)).lower() in GLU:
            raise f.error(
                f"field {f.key(key)} = {shown(f.config[key])}: gated MLPs in a DiT are not modelled",
                key,
                UnsupportedModelError,
            )
    kind = _patch_positions(f, "a DiT")
    classes = _size(f, "num_classes", "number of classes", 1000, limit=2**24)
    dropped = f.config.get("label_dropout_rate", 0.1)
    unconditional = int(isinstance(dropped, int | float) and dropped > 0)  # a row for "no label" (guidance)
    frequencies = f.integer("frequency embedding size", ("frequency_embedding_size",), default=256, limit=MAX_WIDTH)
    t = Transformer(
        depth,
        width,
        0,
        patches,
        _attention(f, width, heads, depth),
        MLP(
            _size(f, "filter_size", "MLP width", 3072, limit=4 * MAX_WIDTH),
            gated=False,
            bias=f.flag("use_ffn_bias", True),
        ),
        final_norm=False,
    )

    def conditioned(name: str, group: str) -> Layer:
        return Layer("dense", width, width, 1, name=name, group=group)

    layers = [
        Layer("dense", channels * patch[0] * patch[1], width, patches, name="patch_embedding", group="embeddings"),
        Layer("dense", frequencies, width, 1, name="timestep.fc1", group="embeddings"),
        Layer("dense", width, width, 1, name="timestep.fc2", group="embeddings"),
        Layer("embedding", classes + unconditional, width, 1, name="label_embeddings", group="embeddings"),
    ]
    if kind == "learned":
        layers.append(Layer("embedding", patches, width, patches, name="position_embeddings", group="embeddings"))
    for layer in blocks(t):
        if layer.kind != "layer_norm":  # the adaptive norms' own normalisation has no parameters
            layers.append(layer)
        if layer.name.endswith(".attn"):
            g = layer.group
            layers += [conditioned(f"{g}.{name}", g) for name in ("ada_ln1.scale", "ada_ln1.shift", "gate_msa")]
            layers += [conditioned(f"{g}.{name}", g) for name in ("ada_ln3.scale", "ada_ln3.shift", "gate_mlp")]
    layers += [conditioned("final_ada_ln.scale", "head"), conditioned("final_ada_ln.shift", "head")]
    layers.append(Layer("conv", width, channels, patches, name="noise_head", kernel_size=patch[0], group="head"))
    f.notes.append(
        f"DiT: {patches} patches of {patch[0]}x{patch[1]} over a {latent[0]}x{latent[1]}x{channels} latent; "
        "each block's two adaptive LayerNorms and two gates are dense layers over the timestep and label embedding"
    )
    return layers


def _patch_grid(f: Fields, key: str, size: tuple[int, int], patch: tuple[int, int]) -> int:
    """The patches an image (or a latent) of ``size`` is cut into: ``patch_size`` must tile it."""
    if size[0] % patch[0] or size[1] % patch[1]:
        raise f.error(f"contradictory fields: {key} {list(size)} is not a multiple of patch_size {list(patch)}")
    return (size[0] // patch[0]) * (size[1] // patch[1])


def _patch_positions(f: Fields, model: str) -> str | None:
    """How an image model's patches know their place: a learned table, fixed sinusoids or nothing
    (the zoo's ViTEmbeddingLayer builds no other kind)."""
    kind = _position_type(f, "learned")
    if kind not in ("learned", "fixed", None):
        raise f.error(
            f"field position_embedding_type {shown(kind)}: {model}'s positions are learned, fixed or null",
            "position_embedding_type",
        )
    return kind


def _pair(f: Fields, key: str, default: tuple[int, int] | None) -> tuple[int, int]:
    """An image or patch size: two positive integers (height, width); a key without a default is required."""
    value = f.config.get(key)
    if value is None:
        if default is None:
            raise f.error(f"missing field {f.key(key)} ([height, width])", key)
        return default
    if not isinstance(value, list) or len(value) != 2:
        raise f.error(f"field {f.key(key)} must be [height, width], got {shown(value)}", key)
    height, width = f.integers(key, limit=MAX_SEQUENCE)
    return height, width


def _t5(f: Fields, seq_len: int | None, target_len: int | None, first_release: bool, flat: bool) -> list[Layer]:
    """The zoo's T5 class, which builds ``t5`` and ``transformer`` (the original encoder-decoder).

    Read as the release builds it (1.9.1's ``modelzoo/transformers/pytorch/t5/model.py`` and
    ``t5_model.py``, 2.10.0's ``models/nlp/t5/t5_model.py``): ``extra_ids`` sentinel tokens added to
    both vocabularies; one token table when ``share_encoder_decoder_embedding``; positions per stack
    (a relative-position bias of ``relative_attention_num_buckets`` x ``num_heads``, a learned table of
    ``src_``/``tgt_max_position_embeddings`` rows for ``learned_absolute``, none for the fixed
    sinusoids); ``num_heads`` heads of ``d_kv``; Q, K, V biases only with
    ``use_projection_bias_in_attention``, never an output-projection bias; two norms per encoder block
    and three per decoder block, plus a final norm per stack (RMSNorm unless ``norm_type``; 1.x:
    LayerNorm when ``use_t5_layer_norm`` is false); the FFN of ``d_ff``, gated for the GLU activations,
    biased with ``use_ffn_bias`` unless an activation is gelu; both stacks' FFNs are built with
    ``encoder_nonlinearity`` (the release passes it to the decoder layer too); the LM head over the
    target vocabulary without a bias, tied with ``share_embedding_weights``. 1.x releases read most
    sizes without defaults; the releases of the flat layout (``flat``: before 2.4.0) take the position
    tables' lengths from ``train_input`` when the section gives none."""
    required = first_release  # 1.x's model.py pops the sizes without a default

    def size(key: str, quantity: str, default: int, limit: int = MAX_WIDTH) -> int:
        return _size(f, key, quantity, None if required else default, limit=limit)

    def activation(key: str, default: str | None) -> str:
        value = f.config.get(key)
        if value is None and default is None:
            raise f.error(f"missing field {f.key(key)} (one of {', '.join(T5_NONLINEARITIES)})", key)
        return str(f.choice(key, default, T5_NONLINEARITIES) if value is not None else default)

    width = size("d_model", "model width", 512)
    heads = size("num_heads", "number of attention heads", 8)
    head_width = size("d_kv", "attention head width", 64)
    ffn_width = size("d_ff", "FFN width", 2048, limit=4 * MAX_WIDTH)
    encoder_layers = size("encoder_num_hidden_layers", "number of encoder layers", 6, limit=MAX_LAYERS)
    decoder_layers = f.integer(
        "number of decoder layers",
        ("decoder_num_hidden_layers",),
        default=None if required else encoder_layers,
        limit=MAX_LAYERS,
    )
    extra = f.integer("sentinel tokens", ("extra_ids",), default=0, minimum=0, limit=2**24)
    source_vocab = size("src_vocab_size", "source vocabulary size", 32128, limit=2**24) + extra
    target_vocab = f.integer("target vocabulary size", ("tgt_vocab_size",), default=source_vocab - extra, limit=2**24)
    target_vocab += extra
    if extra:
        f.notes.append(f"vocabularies: {extra} sentinel tokens (extra_ids) added to each, as the zoo's T5 adds them")
    shared = f.flag("share_encoder_decoder_embedding", True)
    if shared and source_vocab != target_vocab:
        raise f.error(
            f"contradictory fields: share_encoder_decoder_embedding needs one vocabulary, but src_vocab_size gives "
            f"{source_vocab} tokens and tgt_vocab_size {target_vocab}",
            "share_encoder_decoder_embedding",
        )
    if not required and f.flag("tie_encoder_decoder", False):
        raise f.error(
            "field tie_encoder_decoder = true: the zoo's T5 refuses it (tied encoder and decoder weights are not "
            "implemented); set it false to plan",
            "tie_encoder_decoder",
            UnsupportedModelError,
        )
    if required:
        norm, shift = ("rms", False) if f.flag("use_t5_layer_norm", True) else ("layer", True)
    else:
        norm, shift = _norm_type(f, "rmsnorm")
    encoder_activation = activation("encoder_nonlinearity", None if required else "relu")
    decoder_activation = activation("decoder_nonlinearity", None if required else encoder_activation)
    if decoder_activation != encoder_activation:
        f.notes.append(
            f"decoder_nonlinearity {decoder_activation} is not what the release builds: its decoder layers take "
            f"encoder_nonlinearity ({encoder_activation})"
        )
    ffn_bias = f.flag("use_ffn_bias", False)
    if ffn_bias and "gelu" in (encoder_activation, decoder_activation):
        ffn_bias = False
        f.notes.append("use_ffn_bias overridden to false with a gelu nonlinearity, as the zoo's T5 does")
    kind = f.config.get("position_embedding_type", "relative")
    if kind in ("rotary", "alibi") and not required:
        raise f.error(
            f"field position_embedding_type = {shown(kind)}: T5 with {kind} positions is not modelled; "
            "relative, fixed, learned_absolute or null are",
            "position_embedding_type",
            UnsupportedModelError,
        )
    kind = f.choice("position_embedding_type", "relative", T5_POSITIONS)
    source_rows, source_tokens = _t5_length(f, "src", seq_len, flat)
    target_rows, target_tokens = _t5_length(f, "tgt", target_len, flat)
    for side, rows in (("src", source_rows), ("tgt", target_rows)):
        if f.config.get(f"{side}_max_position_embeddings") is None:
            f.notes.append(
                f"{side}_max_position_embeddings absent: the input's {side}_max_sequence_length ({rows}), as the "
                "flat layout's T5 sets it"
            )
    buckets = (
        f.integer("relative attention buckets", ("relative_attention_num_buckets",), default=32)
        if kind == "relative"
        else 0
    )
    learned = kind == "learned_absolute"
    attention = Attention(
        heads,
        heads if required else _kv_groups(f, heads),  # 1.x's T5 has no attention_module
        head_width,
        f.flag("use_projection_bias_in_attention", False),
        False,
    )
    mlp = MLP(ffn_width, gated=encoder_activation in GLU, bias=ffn_bias)

    def stack(layers: int, vocab: int, tokens: int, rows: int, cross: int) -> Transformer:
        return Transformer(
            layers,
            width,
            vocab,
            tokens,
            attention,
            mlp,
            norm=norm,
            norm_bias=shift,
            position_table=rows if learned else 0,
            relative_position_buckets=buckets,
            cross_attention_tokens=cross,
        )

    encoder = stack(encoder_layers, source_vocab, source_tokens, source_rows, 0)
    decoder = stack(decoder_layers, target_vocab, target_tokens, target_rows, source_tokens)
    tied = f.flag("share_embedding_weights", True)
    f.notes.append(
        f"encoder-decoder: the encoder over {source_tokens} source tokens, the decoder over {target_tokens} target "
        "tokens attending to the encoder's output; "
        + ("one token table for both" if shared else "a token table each")
        + "; the LM head"
        + (" tied to the decoder's token table" if tied else " with its own weights")
    )
    return encoder_decoder(encoder, decoder, shared_embedding=shared) + lm_head(decoder, tied=tied, bias=False)


def _t5_length(f: Fields, stack: str, tokens: int | None, flat: bool) -> tuple[int, int]:
    """(position table rows, tokens planned) of T5's ``src`` or ``tgt`` stack: ``{stack}_max_position_embeddings``
    (in a release of the flat layout, the train_input's ``{stack}_max_sequence_length`` when absent, as its
    run sets it) and the length asked, at most that."""
    key = f"{stack}_max_position_embeddings"
    default = tokens if flat else None
    rows = f.integer(
        f"{'source' if stack == 'src' else 'target'} positions", (key,), default=default, limit=MAX_SEQUENCE
    )
    planned = rows if tokens is None else tokens
    if not isinstance(planned, int) or isinstance(planned, bool) or not 1 <= planned <= rows:
        raise f.error(f"the {stack} sequence length must be an integer in 1..{key} ({rows}), got {shown(planned)}", key)
    return rows, planned


def _prefixed(layer: Layer, encoder: str) -> Layer:
    """A layer of one of DPR's encoders, its name and kernel group prefixed with the encoder's (the two
    encoders' kernels stay apart)."""
    group = f"{encoder}.{layer.group}" if layer.group else ""
    return replace(layer, name=f"{encoder}.{layer.name}", group=group)


def _fc_mnist(f: Fields) -> list[Layer]:
    if f.config.get("hidden_sizes") is not None:
        widths = f.integers("hidden_sizes", limit=MAX_WIDTH)
    else:
        depth = f.integer("depth", ("depth",), limit=MAX_LAYERS)
        widths = [f.integer("hidden width", ("hidden_size",), limit=MAX_WIDTH)] * depth
    bias = f.flag("use_bias", True)
    sizes = [MNIST_INPUTS, *widths, MNIST_CLASSES]
    return [
        Layer("dense", a, b, name=f"fc{i + 1}", bias=bias)
        for i, (a, b) in enumerate(zip(sizes, sizes[1:], strict=False))
    ]


def _tokens(f: Fields, seq_len: int | None, longest: int) -> int:
    tokens = longest if seq_len is None else seq_len
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= longest:
        raise f.error(f"seq_len must be an integer in 1..max_position_embeddings ({longest}), got {shown(tokens)}")
    return tokens


def _longest(f: Fields, model_class: str, layers: list[Layer]) -> int:
    if model_class in ("vit", "dit"):
        return max(layer.tokens for layer in layers)  # the image decides the sequence
    if model_class == "dpr":
        f = _sub(f, "q_encoder" if f.config.get("q_encoder") is not None else "encoder")
    if model_class in ("bert", "dpr"):
        return f.integer("maximum sequence length", ("max_position_embeddings",), limit=MAX_SEQUENCE)
    return f.integer("maximum sequence length", ("max_position_embeddings",), default=1024, limit=MAX_SEQUENCE)


__all__ = ["ZOO_FAMILIES", "model_from_zoo_section", "position_table_length"]
