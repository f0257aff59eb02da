"""Model Zoo ``model:`` sections read into the performance model's description.

A Cerebras Model Zoo params file describes its model in a ``model:`` section (the top-level
``model`` of the 1.x layout, ``trainer.init.model`` since 2.x) with the zoo's own key names:
``hidden_size``, ``num_hidden_layers``, ``num_heads``, ``filter_size``, ``vocab_size``,
``max_position_embeddings``, ``position_embedding_type``, ``share_embedding_weights``,
``use_projection_bias_in_attention`` (Q, K, V biases), ``use_ffn_bias_in_attention`` (the output
projection's bias), ``use_ffn_bias``, ``nonlinearity`` (``swiglu`` and the other GLUs make the MLP
gated), ``attention_module: multiquery_attention`` with ``extra_attention_params.num_kv_groups``,
``norm_type`` (1.x: ``use_rms_norm``, ``use_biasless_norm``), ``moe: {num_experts, top_k}``, ...

The zoo builds these families from three model classes, and the class decides the defaults:

* the GPT-2 class (``gpt2``, ``gpt3``, ``llama``, ``mistral``, ``mixtral``): learned positions,
  biases everywhere, a LayerNorm before attention and one before the MLP, a final norm, an LM head
  tied to the token embedding (``share_embedding_weights``, with ``use_bias_in_output``);
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
* the T5 class (``t5``, and ``transformer``, the original encoder-decoder, which the zoo builds from
  the same class): an encoder over the source sequence and a decoder over the target whose blocks
  also attend to the encoder's output, one relative-position bias per stack, no attention or FFN
  biases unless asked, RMSNorms (1.x: LayerNorms unless ``use_t5_layer_norm``), the LM head tied to
  the shared token table; the two sequence lengths are ``seq_len`` (source) and ``target_len``;
* ``fc_mnist``: ``depth`` layers of ``hidden_size`` (or ``hidden_sizes``) from 784 inputs to 10.

Absent keys take the zoo's defaults (2.x's, or 1.x's with ``release="1.x"`` where they differ); keys
that change the architecture in ways not modelled here (cross-attention layers, sandwich norms, extra
input vocabulary, other norm types) are refused with an :class:`UnsupportedModelError` naming the
key; keys that do not change the architecture (dropout, initializers, loss scaling, precision, muP
scales) are not read. A mixture of experts counts every expert in ``params`` and the routed ``top_k``
(plus shared experts) in ``active_params``; weight streaming moves all of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from csconform.errors import UnknownNameError, UnsupportedModelError
from csconform.perf.models.fields import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, Fields, shown
from csconform.perf.models.layer import Layer, total_params
from csconform.perf.models.model_spec import DEFAULT_BATCH, ModelSpec
from csconform.perf.models.transformer import (
    MLP,
    Attention,
    Transformer,
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
    "bert": "bert",
    "esm2": "bert",
    "dpr": "dpr",
    "roberta": "bert",
    "bert/classifier": "bert",
    "bert/token_classifier": "bert",
    "bert/extractive_summarization": "bert",
    "bert/qa": "bert",
    "fc_mnist": "fc_mnist",
    "t5": "t5",
    "transformer": "t5",
}
"""Zoo model names (a section's ``name:``, or the model folder of a 1.x file) -> the model class that builds them."""
PRETRAINING = ("bert", "roberta", "esm2")
"""The BERT-class models whose heads are the pre-training heads (masked LM, and NSP unless disable_nsp)."""
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
    """``zoo_name`` if the performance model knows it; an option naming a model up front
    (``validate --model-family``) is checked here."""
    if zoo_model(zoo_name) is None:
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
    target_len: int | None = None,
) -> ModelSpec:
    """The model a Model Zoo ``model:`` section describes (see the module docstring).

    ``family`` is the zoo model name when the section has no ``name:`` (1.x files: pass the model
    folder; a section's own ``name:`` wins); ``source`` names the section in every error
    (``"params.yaml: trainer.init.model"``); ``seq_len`` is the sequence length to plan at (default:
    ``max_position_embeddings``), the encoder's (source) length for an encoder-decoder, whose decoder
    runs over ``target_len`` (default: ``tgt_max_position_embeddings``); ``release`` ("1.9", "2.10",
    ...; default the newest) picks the zoo's defaults where releases differ."""
    f = Fields(model, source)
    stated = model.get("name")
    if stated is not None and not isinstance(stated, str):
        raise f.error(f"field name must be a string, got {shown(stated)}", "name")
    zoo_name = stated or family
    if zoo_name is None:
        raise f.error(f"missing field name (the zoo model: one of {', '.join(ZOO_FAMILIES)})", "name")
    key = zoo_model(zoo_name)
    if key is None:
        raise UnknownNameError(f"{source}: unknown zoo model {shown(zoo_name)}; known: {', '.join(ZOO_FAMILIES)}")
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
        layers = _bert(f, key, seq_len, first)
    elif model_class == "dpr":
        layers = _dpr(f, seq_len)
    elif model_class == "t5":
        layers = _t5(f, seq_len, target_len, first, flat)
    else:
        layers = _decoder(f, model_class, seq_len)
    planned: int | None = None
    longest: int | None = None
    if model_class == "t5":  # planned at the encoder's (source) length; the notes give the decoder's
        longest, planned = _t5_length(f, "src", seq_len, flat)
    elif model_class != "fc_mnist":
        planned, longest = max(layer.tokens for layer in layers), _longest(f, model_class)
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
        rebuild=functools.partial(_rebuild, dict(model), key, source, name, release, target_len),
    )


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
    target_len: int | None,
    seq_len: int,
) -> ModelSpec:
    return model_from_zoo_section(
        model, family=family, source=source, seq_len=seq_len, name=name, release=release, target_len=target_len
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
    if window:
        where = "every block" if windowed is None else "every other block"
        f.notes.append(f"sliding-window attention: each query attends to at most {window} keys in {where}")
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
    _refuse_unless(f, "norm_first_sandwich", False, "sandwich norms")
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


def _bert(f: Fields, name: str, seq_len: int | None, first_release: bool) -> list[Layer]:
    """The zoo's BERT pre-training model and its fine-tuning heads."""
    width = _size(f, "hidden_size", "model width", 768)
    layers = _size(f, "num_hidden_layers", "number of layers", 12, limit=MAX_LAYERS)
    heads = _size(f, "num_heads", "number of attention heads", 12)
    vocab = _size(f, "vocab_size", "vocabulary size", 50257, limit=2**24)
    kind = _position_type(f, "learned")
    longest = f.integer("maximum sequence length", ("max_position_embeddings",), limit=MAX_SEQUENCE)
    tokens = _tokens(f, seq_len, longest)
    norm, shift = _norm(f)
    pretraining = name in PRETRAINING
    nsp = pretraining and not f.flag("disable_nsp", False)
    segments_default = 2 if (nsp or not pretraining) else 0  # the zoo builds no segment table without NSP
    if first_release and pretraining:  # 1.7-1.9 build 2 segments (none with disable_nsp) and never read the key
        segments = segments_default
        if f.config.get("num_segments") is not None:
            f.notes.append(f"num_segments is not read by the 1.x pre-training model: {segments} segment embeddings")
    else:
        segments = f.integer("number of segments", ("num_segments",), default=segments_default, minimum=0, limit=2**16)
    rows = longest
    if f.flag("mask_padding_in_positional_embed", False):
        rows += f.integer("pad token id", ("pad_token_id",), default=0, minimum=0)
    ffn_bias = f.flag("use_ffn_bias", True)
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
        embedding_norm=f.flag("embedding_layer_norm", True),
        final_norm=f.flag("use_final_layer_norm", False),
        position_table=table,
        relative_position_buckets=buckets,
    )
    body = trunk(t)
    if name == "bert/classifier":
        labels = f.integer("number of labels", ("num_labels",), limit=2**24)
        f.notes.append(f"heads counted: the pooler and a classifier over {labels} labels")
        return body + pooler(t, ffn_bias) + classifier(t, labels)
    if name == "bert/token_classifier":
        classes = f.integer("number of classes", ("num_classes",), limit=2**24)
        f.notes.append(f"heads counted: a classifier over {classes} classes at every token; no pooler")
        return body + classifier(t, classes, tokens=tokens)
    if name == "bert/qa":
        f.notes.append("heads counted: a start/end classifier (2 outputs) at every token; no pooler")
        return body + classifier(t, 2, tokens=tokens)
    if name == "bert/extractive_summarization":
        labels = f.integer("number of labels", ("num_labels",), default=2, limit=2)
        f.notes.append(
            f"heads counted: a classifier over {labels} labels (its FLOPs counted at every token, an upper bound "
            "for the sentence tokens it reads); no pooler"
        )
        return body + classifier(t, labels, bias=f.flag("use_cls_bias", True), tokens=tokens)
    tied = f.flag("share_embedding_weights", True)
    mlm = masked_lm_head(
        t, tied=tied, transform_bias=f.flag("use_ffn_bias_in_mlm", True), bias=f.flag("use_output_bias_in_mlm", True)
    )
    if not nsp:
        f.notes.append(
            "heads counted: the masked-LM head (transform, LayerNorm, decoder); no pooler, no NSP (disable_nsp)"
        )
        return body + mlm
    classes = f.integer("number of NSP classes", ("num_classes",), default=2, limit=2**16)
    f.notes.append(
        "heads counted: the pooler, next-sentence prediction and the masked-LM head (transform, LayerNorm, decoder)"
    )
    return body + pooler(t, ffn_bias) + classifier(t, classes, name="nsp", bias=ffn_bias) + mlm


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


def _longest(f: Fields, model_class: str) -> int:
    if model_class == "dpr":
        f = _sub(f, "q_encoder" if f.config.get("q_encoder") is not None else "encoder")
    if model_class in ("bert", "dpr"):
        return f.integer("maximum sequence length", ("max_position_embeddings",), limit=MAX_SEQUENCE)
    return f.integer("maximum sequence length", ("max_position_embeddings",), default=1024, limit=MAX_SEQUENCE)


__all__ = ["ZOO_FAMILIES", "model_from_zoo_section"]
