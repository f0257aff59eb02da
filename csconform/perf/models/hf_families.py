"""The Hugging Face model families: what each reads from a config, as transformers builds the model.

Every sequence family states its sizes in the same few fields under its own spellings; the alias
table :data:`SIZE_FIELDS` says which, so each family's reader only says what the family adds
(beyond the sizes, as Hugging Face's own model code builds it):

==============  ===============================================================================
``gpt2``        learned positions (``n_positions``; ``n_ctx`` is a legacy field transformers
                ignores), pre-LN blocks, MLP d -> ``n_inner`` (4d) -> d, tied LM head
``gptj``        rotary, attention and MLP in parallel from one LN, no attention biases, LM head bias
``gpt_neox``    rotary, two LNs per block, biased projections (``attention_bias``), untied output
``llama``       rotary, RMSNorm, gated SiLU MLP, grouped-query attention (``num_key_value_heads``),
                ``attention_bias``/``mlp_bias``, ``head_dim``; LLaMA-1's ``max_sequence_length``
``mistral``     llama's block without biases, sliding-window attention (``sliding_window``); an
                absent ``num_key_value_heads`` is transformers' default 8 (Qwen2: 32), not one per head
``qwen2``       mistral's, with Q, K and V biases (not the output's); the window only when
                ``use_sliding_window``, from block ``max_window_layers`` on
``gemma2``      llama's attention and gated MLP (GeGLU) with ``head_dim`` apart from the width (default
                256), RMSNorm before and after attention and MLP (four per block), sliding-window attention
                in every other block from block 0 (or as ``layer_types`` says), tied LM head
``mixtral``     mistral's attention, a mixture of ``num_local_experts`` (or ``num_experts``) gated MLPs of which
                ``num_experts_per_tok`` run per token, a router without bias
``phi``         phi-1/1.5/2: partial rotary, one LN feeding attention and MLP in parallel, biases
                on every dense layer and the LM head, optional ``qk_layernorm``
``falcon``      parallel attention (one LN, or ``ln_attn``/``ln_mlp`` with
                ``new_decoder_architecture``), multi-query (``multi_query``) or grouped
                (``num_kv_heads``) fused QKV, ``bias``, rotary or ALiBi, tied LM head
``opt``         learned positions with 2 extra rows, ReLU MLP ``ffn_dim``, ``enable_bias``,
                ``word_embed_proj_dim`` projections, final LN unless post-LN, tied LM head
``bloom``       ALiBi (no position table), LN after the embedding, biased fused QKV, MLP 4d
``mpt``         ALiBi, fused QKV, MLP 4d, LayerNorms without shift, no biases, tied LM head: what
                transformers' MptForCausalLM builds whatever ``expansion_ratio``, ``no_bias`` and
                ``attn_config`` say; MosaicML's own code reads them, so other values are refused
``bert``        learned positions and token types, embedding LN, post-LN encoder
``roberta``     bert's encoder (its position table has ``max_position_embeddings`` rows)
``resnet``      Hugging Face ResNetConfig (bottleneck blocks; a block's shortcut has a projection only
                where the shape changes; ``downsample_in_first_stage``); ``image_size`` (default 224) is ours
``mlp``         ours: a fully connected network, ``layer_widths`` from input to output
==============  ===============================================================================

Heads follow ``architectures``, and the model's notes say which are counted: a decoder's
``*ForCausalLM``/``*LMHeadModel`` (or no ``architectures``) gets the LM head, ``*ForSequenceClassification``
a score layer, the bare ``*Model`` none. BERT and RoBERTa: ``*ForMaskedLM`` the masked-LM head
(dense transform, LayerNorm, decoder tied to the token embedding, its bias) and no pooler;
``*ForPreTraining`` (BERT's default) adds the pooler and next-sentence prediction; ``*Model`` the
pooler only; ``*ForSequenceClassification`` the pooler (RoBERTa: its dense layer) and a classifier.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from csconform.errors import UnsupportedModelError
from csconform.perf.models.fields import MAX_LAYERS, MAX_SEQUENCE, MAX_WIDTH, Fields, shown
from csconform.perf.models.layer import Layer
from csconform.perf.models.transformer import (
    MLP,
    Attention,
    Transformer,
    classifier,
    lm_head,
    masked_lm_head,
    moe_note,
    pooler,
    trunk,
)

# --- the alias table: where each family states its sizes ------------------------------------------

WIDTH = ("n_embd", "hidden_size")
LAYERS = ("n_layer", "num_hidden_layers")
HEADS = ("n_head", "num_attention_heads")


@dataclass(frozen=True)
class SizeFields:
    """Where a family's config states the sizes of its transformer: every spelling transformers reads
    for each size (the first is the one a refusal names), and the longest sequence's default."""

    positions: tuple[str, ...] = ("max_position_embeddings",)
    width: tuple[str, ...] = WIDTH
    layers: tuple[str, ...] = LAYERS
    heads: tuple[str, ...] = HEADS
    positions_default: int | None = None
    """transformers' longest sequence when the config states none (``None``: the field is required)."""
    positions_limit: bool = True
    """False where positions have no table (ALiBi): the config's length is a default, not a limit."""


FALCON_SIZES = SizeFields(
    width=("hidden_size", "n_embed"),
    layers=("num_hidden_layers", "n_layer"),
    heads=("num_attention_heads", "n_head"),
    positions_default=2048,
)
SIZE_FIELDS: dict[str, SizeFields] = {
    "gpt2": SizeFields(positions=("n_positions", "max_position_embeddings")),
    "gptj": SizeFields(positions=("n_positions", "max_position_embeddings")),
    "gpt_neox": SizeFields(),
    "llama": SizeFields(),
    "mistral": SizeFields(),
    "qwen2": SizeFields(),
    "mixtral": SizeFields(),
    "phi": SizeFields(),
    "falcon": FALCON_SIZES,
    "opt": SizeFields(),
    "bloom": replace(FALCON_SIZES, positions=("seq_length",), positions_limit=False),
    "mpt": SizeFields(
        positions=("max_seq_len",),
        width=("d_model", "hidden_size"),
        layers=("n_layers", "num_hidden_layers"),
        heads=("n_heads", "num_attention_heads"),
        positions_default=2048,
        positions_limit=False,
    ),
    "gemma2": SizeFields(),
    "bert": SizeFields(),
    "roberta": SizeFields(),
}
"""The sequence families and how their configs spell the sizes (resnet and mlp have none of these)."""
GPT2_LEGACY_POSITIONS = 1024
"""transformers' default n_positions, the longest sequence of a GPT-2 config that gives only the legacy n_ctx."""


@dataclass(frozen=True)
class Shape:
    """The sizes every transformer config states."""

    layers: int
    width: int
    heads: int
    vocab: int
    positions: int
    tokens: int
    heads_key: str
    """The spelling that holds the number of heads (a refusal about the heads names it)."""

    def transformer(self, attention: Attention, mlp: MLP, **choices: Any) -> Transformer:
        """The transformer of these sizes, with the family's attention, MLP and other choices."""
        return Transformer(self.layers, self.width, self.vocab, self.tokens, attention, mlp, **choices)


def shape(f: Fields, sizes: SizeFields, seq_len: int | None) -> Shape:
    """Sizes, and the sequence length to plan at (``seq_len``, else the longest the config allows)."""
    n_layers = f.integer("number of layers", sizes.layers, limit=MAX_LAYERS)
    n_width = f.integer("model width", sizes.width, limit=MAX_WIDTH)
    n_heads = f.integer("number of attention heads", sizes.heads, limit=MAX_WIDTH)
    vocab = f.integer("vocabulary size", ("vocab_size",))
    longest = f.integer("maximum sequence length", sizes.positions, default=sizes.positions_default, limit=MAX_SEQUENCE)
    tokens = longest if seq_len is None else seq_len
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_SEQUENCE:
        raise f.error(f"seq_len must be a positive integer up to {MAX_SEQUENCE}, got {shown(tokens)}")
    if sizes.positions_limit and tokens > longest:
        spelled = next((n for n in sizes.positions if f.config.get(n) is not None), sizes.positions[0])
        raise f.error(f"seq_len {tokens} is longer than the config's {f.key(spelled)} ({longest})", spelled)
    heads_key = f.present(sizes.heads)[0][0]  # heads are required, so one spelling holds them
    return Shape(n_layers, n_width, n_heads, vocab, longest, tokens, heads_key)


def even_heads(f: Fields, s: Shape) -> int:
    """The head width when heads split the model width evenly (refused otherwise)."""
    if s.heads > s.width or s.width % s.heads:
        raise f.error(
            f"contradictory fields: the model width ({s.width}) must be a multiple of the number of attention "
            f"heads ({s.heads})",
            s.heads_key,
        )
    return s.width // s.heads


def multi_head(f: Fields, s: Shape, qkv_bias: bool, output_bias: bool) -> Attention:
    """Attention with one key/value head per query head, the heads splitting the model width evenly."""
    return Attention(s.heads, s.heads, even_heads(f, s), qkv_bias, output_bias)


def head_dim(f: Fields, s: Shape) -> int:
    """``head_dim`` when the config gives one (Mistral-Nemo's queries are wider than the model), else d / heads."""
    if "head_dim" in f.config and f.config["head_dim"] is not None:
        return f.integer("head dimension", ("head_dim",), limit=MAX_WIDTH)
    return even_heads(f, s)


def kv_heads(f: Fields, heads: int, names: Sequence[str] = ("num_key_value_heads",), default: int | None = None) -> int:
    """Key/value heads: the config's, else ``default`` (the family's transformers default; one per head)."""
    absent = not f.present(names)
    groups = f.integer(
        "number of key/value heads", names, default=heads if default is None else default, limit=MAX_WIDTH
    )
    if groups > heads or heads % groups:
        stated = f"absent, transformers' default {groups}" if absent else groups
        raise f.error(
            f"contradictory fields: {f.key(names[0])} ({stated}) must divide the {heads} attention heads", names[0]
        )
    if absent and default is not None:
        f.notes.append(f"{f.key(names[0])} absent: transformers' default {groups} key/value heads")
    return groups


def rotary_check(f: Fields, dim: int) -> None:
    rotary = f.integer("rotary dimension", ("rotary_dim",), default=dim, limit=MAX_WIDTH)
    if rotary > dim:
        raise f.error(f"contradictory fields: rotary_dim {rotary} exceeds the head dimension {dim}", "rotary_dim")


def decoder_head(f: Fields, t: Transformer, *, tied_default: bool, bias: bool) -> list[Layer]:
    """The head ``architectures`` names: the LM head, a sequence-classification score layer, or none."""
    names = f.strings("architectures")
    if any(n.endswith("ForSequenceClassification") for n in names):
        labels = f.labels(default=2)
        f.notes.append(f"head: a score layer over {labels} labels (sequence classification), no LM head")
        return [Layer("dense", t.width, labels, 1, name="score", bias=False, group="head", scored=True)]
    if not names or any(n.endswith(("ForCausalLM", "LMHeadModel")) for n in names):
        tied = f.flag("tie_word_embeddings", tied_default)
        f.notes.append("head: the LM head" + (" (tied to the token embedding)" if tied else " (its own weights)"))
        return lm_head(t, tied=tied, bias=bias)
    if all(n.endswith("Model") and not n.endswith("HeadsModel") for n in names):  # GPT2DoubleHeadsModel has heads
        f.notes.append("head: none (the bare model)")
        return []
    raise f.error(
        f"field {f.key('architectures')}: {', '.join(names)} is not modelled (known heads: *ForCausalLM, "
        "*LMHeadModel, *ForSequenceClassification, the bare *Model)",
        "architectures",
        UnsupportedModelError,
    )


# --- the families -----------------------------------------------------------------------------------


def _gpt2(f: Fields, seq_len: int | None) -> list[Layer]:
    # transformers' GPT2Config maps max_position_embeddings to n_positions; n_ctx is a legacy field it ignores
    sizes = SIZE_FIELDS["gpt2"]
    n_ctx = f.config.get("n_ctx")
    legacy = n_ctx is not None and not f.present(sizes.positions)
    s = shape(f, replace(sizes, positions_default=GPT2_LEGACY_POSITIONS) if legacy else sizes, seq_len)
    if n_ctx is not None and n_ctx != s.positions:
        f.notes.append(
            f"n_ctx ({shown(n_ctx)}) is a legacy field transformers ignores; n_positions ({s.positions}) sets the "
            "position table and the longest sequence"
            + (" (transformers' default, as the config has no n_positions)" if legacy else "")
        )
    f.check_activation("activation_function")
    if f.flag("add_cross_attention", False):
        raise f.error(
            "field add_cross_attention: cross-attention blocks are not modelled",
            "add_cross_attention",
            UnsupportedModelError,
        )
    ffn = f.integer("MLP width", ("n_inner",), default=4 * s.width, limit=4 * MAX_WIDTH)
    t = s.transformer(multi_head(f, s, True, True), MLP(ffn, gated=False, bias=True), position_table=s.positions)
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def _gptj(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, SIZE_FIELDS["gptj"], seq_len)
    f.check_activation("activation_function")
    dim = even_heads(f, s)
    rotary_check(f, dim)
    ffn = f.integer("MLP width", ("n_inner",), default=4 * s.width, limit=4 * MAX_WIDTH)
    t = s.transformer(Attention(s.heads, s.heads, dim, False, False), MLP(ffn, gated=False, bias=True), block_norms=1)
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=True)


def _gpt_neox(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, SIZE_FIELDS["gpt_neox"], seq_len)
    f.check_activation("hidden_act")
    f.check_number("rotary_pct", 0.0, 1.0)
    f.check_flag("use_parallel_residual")  # attention and MLP in parallel or not, each with its own LN
    bias = f.flag("attention_bias", True)
    ffn = f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH)
    t = s.transformer(multi_head(f, s, bias, bias), MLP(ffn, False, True))
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=False)


# transformers' MistralConfig and MixtralConfig default num_key_value_heads to 8, Qwen2Config to 32, Gemma2Config
# to 4 (not to the number of attention heads, as LlamaConfig and PhiConfig do)
KV_HEADS_DEFAULT = {"mistral": 8, "mixtral": 8, "qwen2": 32, "gemma2": 4}


def _llama_like(f: Fields, seq_len: int | None, family: str) -> list[Layer]:
    """LLaMA and its descendants: RMSNorm, gated SiLU MLP, grouped-query attention, rotary positions."""
    sizes = SIZE_FIELDS[family]
    if family == "llama" and not f.present(sizes.positions) and f.present(("max_sequence_length",)):
        sizes = replace(sizes, positions=("max_sequence_length",))
        f.notes.append(
            "max_sequence_length (a LLaMA-1 conversion field transformers ignores) is the longest sequence, as the "
            "config has no max_position_embeddings; rotary positions have no table, so it does not change the count"
        )
    elif family == "llama" and f.present(("max_sequence_length",)):
        f.notes.append("max_position_embeddings governs; max_sequence_length is a LLaMA-1 field transformers ignores")
    s = shape(f, sizes, seq_len)
    f.check_activation("hidden_act")
    dim = head_dim(f, s)
    groups = kv_heads(f, s.heads, default=KV_HEADS_DEFAULT.get(family))
    ffn = f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH)
    qkv_bias = output_bias = mlp_bias = False
    window, windowed = 0, None
    experts, per_token = 1, 1
    if family == "llama":
        qkv_bias = output_bias = f.flag("attention_bias", False)
        mlp_bias = f.flag("mlp_bias", False)
    elif family == "qwen2":
        qkv_bias = True
        if f.flag("use_sliding_window", False):
            window = f.integer("sliding window", ("sliding_window",), default=4096, limit=MAX_SEQUENCE)
            first = f.integer("first windowed block", ("max_window_layers",), default=28, minimum=0, limit=MAX_LAYERS)
            windowed = tuple(range(first, s.layers))
    if family in ("mistral", "mixtral"):
        # transformers' MistralConfig defaults sliding_window to 4096 when the field is absent; Mixtral's to None
        default = 4096 if family == "mistral" and "sliding_window" not in f.config else 0
        window = f.integer("sliding window", ("sliding_window",), default=default, limit=MAX_SEQUENCE)
    if window:
        where = (
            "every block" if windowed is None else f"blocks {windowed[0]}..{s.layers - 1}" if windowed else "no block"
        )
        f.notes.append(f"sliding-window attention: each query attends to at most {window} keys in {where}")
    if family == "mixtral":
        # MixtralConfig maps num_experts onto num_local_experts
        experts = f.integer("number of experts", ("num_local_experts", "num_experts"), default=8, limit=2**16)
        per_token = f.integer("experts per token", ("num_experts_per_tok",), default=2, limit=2**16)
        if per_token > experts:
            raise f.error(
                f"contradictory fields: num_experts_per_tok ({per_token}) exceeds num_local_experts ({experts})",
                "num_experts_per_tok",
            )
    t = s.transformer(
        Attention(s.heads, groups, dim, qkv_bias, output_bias, window=window, windowed_layers=windowed),
        MLP(ffn, gated=True, bias=mlp_bias, experts=experts, experts_per_token=per_token),
        norm="rms",
    )
    layers = trunk(t) + decoder_head(f, t, tied_default=False, bias=False)
    if experts > 1:
        f.notes.append(moe_note(layers, experts, per_token))
    return layers


def _phi(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, SIZE_FIELDS["phi"], seq_len)
    f.check_activation("hidden_act")
    f.check_number("partial_rotary_factor", 0.0, 1.0)  # rotates part of each head: no parameters either way
    dim = head_dim(f, s)
    t = s.transformer(
        Attention(s.heads, kv_heads(f, s.heads), dim, True, True, qk_norm=f.flag("qk_layernorm", False)),
        MLP(f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH), gated=False, bias=True),
        block_norms=1,
    )
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=True)


def _falcon(f: Fields, seq_len: int | None) -> list[Layer]:
    sizes = SIZE_FIELDS["falcon"]
    absent = not f.present(sizes.positions)
    s = shape(f, sizes, seq_len)
    if absent:
        f.notes.append("max_position_embeddings absent: transformers' default 2048 is the longest sequence")
    dim = even_heads(f, s)
    new_architecture = f.flag("new_decoder_architecture", False)
    multi_query = f.flag("multi_query", True)
    parallel = f.flag("parallel_attn", True)
    bias = f.flag("bias", False)
    if new_architecture:
        groups = kv_heads(f, s.heads, ("num_kv_heads", "n_head_kv"))
        norms = f.integer("norms per block", ("num_ln_in_parallel_attn",), default=2, limit=2) if parallel else 2
    else:
        groups = 1 if multi_query else s.heads
        norms = 1 if parallel else 2
    f.notes.append(
        ("alibi positions" if f.flag("alibi", False) else "rotary positions")
        + f", {groups} key/value head{'s' if groups > 1 else ''}, {norms} LayerNorm{'s' if norms > 1 else ''} per block"
        + (", attention and MLP in parallel" if parallel else "")
    )
    ffn = f.integer("MLP width", ("ffn_hidden_size",), default=4 * s.width, limit=4 * MAX_WIDTH)
    t = s.transformer(Attention(s.heads, groups, dim, bias, bias), MLP(ffn, gated=False, bias=bias), block_norms=norms)
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def _opt(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, SIZE_FIELDS["opt"], seq_len)
    f.check_activation("activation_function")
    if not f.flag("layer_norm_elementwise_affine", True):
        raise f.error(
            "field layer_norm_elementwise_affine: LayerNorms without weights are not modelled",
            "layer_norm_elementwise_affine",
            UnsupportedModelError,
        )
    bias = f.flag("enable_bias", True)
    projection = f.integer("word embedding width", ("word_embed_proj_dim",), default=s.width, limit=MAX_WIDTH)
    final_norm = f.flag("do_layer_norm_before", True) and not f.flag("_remove_final_layer_norm", False)
    f.notes.append(f"OPT's learned position table has max_position_embeddings + 2 = {s.positions + 2} rows")
    t = s.transformer(
        multi_head(f, s, bias, bias),
        MLP(f.integer("MLP width", ("ffn_dim",), limit=4 * MAX_WIDTH), gated=False, bias=bias),
        position_table=s.positions + 2,
        embedding_width=0 if projection == s.width else projection,
        final_norm=final_norm,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def alibi_shape(f: Fields, family: str, seq_len: int | None) -> Shape:
    """The sizes of an ALiBi family, noting that its length field is a default, not a limit."""
    sizes = SIZE_FIELDS[family]
    s = shape(f, sizes, seq_len)
    field = sizes.positions[0]
    stated = f"{field}, the training length" if f.present(sizes.positions) else f"no {field} given"
    f.notes.append(
        f"ALiBi positions: no position table; {s.positions} ({stated}) is the default sequence length, not a limit"
    )
    return s


def _bloom(f: Fields, seq_len: int | None) -> list[Layer]:
    s = alibi_shape(f, "bloom", seq_len)
    t = s.transformer(
        multi_head(f, s, True, True),
        MLP(4 * s.width, gated=False, bias=True),  # BloomMLP is always 4d wide
        embedding_norm=True,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


MPT_AS_BUILT = {  # field -> (the value transformers' MptForCausalLM builds whatever the config says, what that is)
    "expansion_ratio": (4, "an MLP 4 x d_model wide"),
    "no_bias": (True, "no biases"),
    "attn_config.alibi": (True, "ALiBi positions"),
    "attn_config.attn_type": ("multihead_attention", "one key/value head per attention head"),
    "attn_config.qk_ln": (False, "no query/key LayerNorm"),
    "ffn_config.ffn_type": ("mptmlp", "a GELU MLP (mptmlp)"),
}


def _mpt(f: Fields, seq_len: int | None) -> list[Layer]:
    """MPT as transformers' MptForCausalLM builds it, where MosaicML's own code (the hub config's ``auto_map``)
    builds the same model; a field on which the two would differ is refused, naming it."""
    s = alibi_shape(f, "mpt", seq_len)
    attention = Fields(f.config.get("attn_config") or {}, f.source, prefix="attn_config.")
    ffn = Fields(f.config.get("ffn_config") or {}, f.source, prefix="ffn_config.")
    f.check_flag("learned_pos_emb")  # MosaicML's code reads it only without ALiBi, which is refused below
    stated = {
        "expansion_ratio": f.integer("MLP expansion ratio", ("expansion_ratio",), default=4, limit=MAX_WIDTH),
        "no_bias": f.flag("no_bias", True),
        "attn_config.alibi": attention.flag("alibi", True),
        "attn_config.attn_type": attention.string("attn_type", "multihead_attention"),
        "attn_config.qk_ln": attention.flag("qk_ln", False),
        "ffn_config.ffn_type": ffn.string("ffn_type", "mptmlp"),
    }
    for key, value in stated.items():
        built, what = MPT_AS_BUILT[key]
        if value != built:
            raise f.error(
                f"field {key}: {json.dumps(value)} is not modelled: transformers' MptForCausalLM builds {what} "
                "whatever it says, MosaicML's own code builds what it says, and the two counts differ; csconform "
                f"plans MPT where both agree ({key} {json.dumps(built)})",
                key,
                UnsupportedModelError,
            )
    t = s.transformer(multi_head(f, s, False, False), MLP(4 * s.width, gated=False, bias=False), norm_bias=False)
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


GEMMA2_HEAD_DIM = 256
"""Gemma2Config's head width when the config gives none (not hidden_size / heads)."""
GEMMA2_LAYER_TYPES = ("sliding_attention", "full_attention")


def _gemma2(f: Fields, seq_len: int | None) -> list[Layer]:
    """Gemma 2: grouped-query attention of ``head_dim``-wide heads, a GeGLU MLP, RMSNorm before and after each,
    sliding-window attention in every other block (or as ``layer_types`` says)."""
    s = shape(f, SIZE_FIELDS["gemma2"], seq_len)
    f.check_activation("hidden_activation")  # what Gemma2Config reads; the hub's files also carry hidden_act
    f.check_activation("hidden_act")
    if not f.present(("head_dim",)):
        f.notes.append(f"head_dim absent: transformers' default {GEMMA2_HEAD_DIM} (not hidden_size / heads)")
    dim = f.integer("head dimension", ("head_dim",), default=GEMMA2_HEAD_DIM, limit=MAX_WIDTH)
    groups = kv_heads(f, s.heads, default=KV_HEADS_DEFAULT["gemma2"])
    bias = f.flag("attention_bias", False)
    window = f.integer(
        "sliding window",
        ("sliding_window",),
        default=4096 if "sliding_window" not in f.config else 0,
        limit=MAX_SEQUENCE,
    )
    types = f.strings("layer_types")
    if types and (len(types) != s.layers or any(kind not in GEMMA2_LAYER_TYPES for kind in types)):
        raise f.error(
            f"field layer_types must list one of {', '.join(GEMMA2_LAYER_TYPES)} for each of the {s.layers} blocks, "
            f"got {shown(types)}",
            "layer_types",
        )
    windowed = tuple(i for i in range(s.layers) if (types[i] == "sliding_attention" if types else i % 2 == 0))
    if window:
        source = "layer_types" if types else "every other block from block 0, transformers' default"
        f.notes.append(
            f"sliding-window attention: each query attends to at most {window} keys in {len(windowed)} of the "
            f"{s.layers} blocks ({source})"
        )
    t = s.transformer(
        Attention(s.heads, groups, dim, bias, bias, window=window, windowed_layers=windowed),
        MLP(f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH), gated=True, bias=False),
        norm="rms",
        post_norms=True,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


MLM_HEAD = "the masked-LM head (transform, LayerNorm, decoder tied to the token embedding, its bias); no pooler"
ENCODER_HEADS = {  # architecture suffix -> the heads counted (checked in this order: LMHeadModel before Model)
    "ForMaskedLM": MLM_HEAD,
    "ForCausalLM": MLM_HEAD.replace("masked-LM", "LM"),
    "LMHeadModel": MLM_HEAD.replace("masked-LM", "LM"),
    "ForPreTraining": "the pooler, next-sentence prediction and the masked-LM head (decoder tied to the embedding)",
    "ForSequenceClassification": "a pooler-sized dense layer and a classifier",
    "Model": "the pooler",
}


def _encoder(f: Fields, seq_len: int | None, family: str) -> list[Layer]:
    """BERT and RoBERTa: learned positions and token types, an embedding LN, post-LN blocks, the named heads."""
    s = shape(f, SIZE_FIELDS[family], seq_len)
    f.check_activation("hidden_act")
    t = s.transformer(
        multi_head(f, s, True, True),
        MLP(f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH), gated=False, bias=True),
        position_table=s.positions,
        token_types=f.integer("number of token types", ("type_vocab_size",), default=2, limit=2**16),
        embedding_norm=True,
        final_norm=False,
    )
    names = f.strings("architectures")
    default = "ForPreTraining" if family == "bert" else "ForMaskedLM"
    kinds = [k for k in ENCODER_HEADS if any(n.endswith(k) for n in names)] if names else [default]
    if not kinds:
        raise f.error(
            f"field {f.key('architectures')}: {', '.join(names)} is not modelled (known heads: "
            + ", ".join(f"*{k}" for k in ENCODER_HEADS)
            + ")",
            "architectures",
            UnsupportedModelError,
        )
    kind = kinds[0]
    f.notes.append(f"heads counted ({'*' + kind if names else 'no architectures: *' + kind}): {ENCODER_HEADS[kind]}")
    tied = f.flag("tie_word_embeddings", True)
    if kind in ("ForMaskedLM", "ForCausalLM", "LMHeadModel"):
        return trunk(t) + masked_lm_head(t, tied=tied)
    if kind == "ForPreTraining":
        return trunk(t) + pooler(t) + classifier(t, 2, name="nsp") + masked_lm_head(t, tied=tied)
    if kind == "ForSequenceClassification":
        return trunk(t) + pooler(t) + classifier(t, f.labels(default=2))
    return trunk(t) + pooler(t)


def _resnet(f: Fields, seq_len: int | None) -> list[Layer]:
    """Bottleneck ResNet (v1.5: the stride sits on the 3x3 conv); batch norm modeled as ``layer_norm``."""
    if seq_len is not None:
        raise f.error("a resnet has no sequence length to set")
    if f.config.get("layer_type", "bottleneck") != "bottleneck":
        raise f.error(
            f"field layer_type: only 'bottleneck' is supported, got {shown(f.config['layer_type'])}", "layer_type"
        )
    depths, outs = f.integers("depths", limit=MAX_LAYERS), f.integers("hidden_sizes", limit=2**16)
    if len(depths) != len(outs):
        raise f.error(f"contradictory fields: {len(depths)} depths but {len(outs)} hidden_sizes", "hidden_sizes")
    if any(o % 4 for o in outs):
        raise f.error("field hidden_sizes: bottleneck widths must be multiples of 4", "hidden_sizes")
    channels = f.integer("input channels", ("num_channels",), default=3, limit=2**16)
    stem_out = f.integer("stem width", ("embedding_size",), default=64, limit=2**16)
    image = f.integer("image size", ("image_size",), default=224, limit=2**14)
    labels = f.labels(default=2)  # transformers' default; an ImageNet checkpoint's config gives its 1000 labels
    first_stride = 2 if f.flag("downsample_in_first_stage", False) else 1
    if image < 4 * first_stride * 2 ** (len(depths) - 1):
        raise f.error(f"field image_size {image} is too small for {len(depths)} stages", "image_size")
    stem = image // 2
    layers = [
        Layer("conv", channels, stem_out, stem * stem, name="conv1", kernel_size=7, stride=2, bias=False, group="stem"),
        Layer("layer_norm", stem_out, stem_out, stem * stem, name="bn1", group="stem"),
    ]
    res, in_ch = image // 4, stem_out  # after the stride-2 stem conv and the stride-2 max pool
    for stage, (out_ch, blocks) in enumerate(zip(outs, depths, strict=True)):
        width, stage_res = out_ch // 4, res // (first_stride * 2**stage)
        for b in range(blocks):
            g = f"layer{stage + 1}.{b}"
            stride = 1 if b else 2 if stage else first_stride
            in_px, out_px = (stage_res * stride) ** 2, stage_res * stage_res
            layers += [
                Layer("conv", in_ch, width, in_px, name=f"{g}.conv1", bias=False, group=g),
                Layer("layer_norm", width, width, in_px, name=f"{g}.bn1", group=g),
                Layer(
                    "conv", width, width, out_px, name=f"{g}.conv2", kernel_size=3, stride=stride, bias=False, group=g
                ),
                Layer("layer_norm", width, width, out_px, name=f"{g}.bn2", group=g),
                Layer("conv", width, out_ch, out_px, name=f"{g}.conv3", bias=False, group=g),
                Layer("layer_norm", out_ch, out_ch, out_px, name=f"{g}.bn3", group=g),
            ]
            if in_ch != out_ch or stride != 1:  # the shortcut projects only what changes shape, as transformers'
                layers += [
                    Layer("conv", in_ch, out_ch, out_px, name=f"{g}.downsample", stride=stride, bias=False, group=g),
                    Layer("layer_norm", out_ch, out_ch, out_px, name=f"{g}.downsample.bn", group=g),
                ]
            in_ch = out_ch
    layers.append(Layer("dense", in_ch, labels, 1, name="fc", group="head"))
    return layers


def _mlp(f: Fields, seq_len: int | None) -> list[Layer]:
    if seq_len is not None:
        raise f.error("an mlp has no sequence length to set")
    widths = f.integers("layer_widths")
    if len(widths) < 2:
        raise f.error("field layer_widths needs at least an input and an output width", "layer_widths")
    return [Layer("dense", a, b, name=f"fc{i + 1}") for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))]


FAMILIES: dict[str, Callable[[Fields, int | None], list[Layer]]] = {
    "gpt2": _gpt2,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "llama": functools.partial(_llama_like, family="llama"),
    "mistral": functools.partial(_llama_like, family="mistral"),
    "qwen2": functools.partial(_llama_like, family="qwen2"),
    "mixtral": functools.partial(_llama_like, family="mixtral"),
    "phi": _phi,
    "falcon": _falcon,
    "opt": _opt,
    "bloom": _bloom,
    "mpt": _mpt,
    "gemma2": _gemma2,
    "bert": functools.partial(_encoder, family="bert"),
    "roberta": functools.partial(_encoder, family="roberta"),
    "resnet": _resnet,
    "mlp": _mlp,
}
SEQUENCE_FAMILIES = tuple(name for name in FAMILIES if name not in ("resnet", "mlp"))
