"""Transformers as one description, and the layer list the performance model plans from it.

Hugging Face configs (:mod:`csconform.perf.models.hf_config`) and Model Zoo ``model:`` sections
(:mod:`csconform.perf.models.zoo_section`) spell a transformer differently but describe the same few
choices: how tokens and positions are embedded, the attention (heads, key/value heads, head width,
biases, a sliding window), the MLP (width, gated or not, biases, a mixture of experts), the norms
(LayerNorm, RMSNorm; one per block when attention and MLP run in parallel from it, two otherwise, four
when their outputs are normed too) and what sits on top (a language-model head, tied to the token
embedding or not; BERT's heads).
:class:`Transformer` holds those choices; :func:`trunk` (or :func:`blocks`, for inputs embedded
elsewhere) and the head builders turn them into :class:`~csconform.perf.models.layer.Layer`
records, one group (pipeline stage) per block.
An encoder-decoder (T5, the original Transformer) is two of them: the encoder over the source
sequence and the decoder over the target, whose blocks also attend to the encoder's output
(``cross_attention_tokens``); :func:`encoder_decoder` builds both stacks around one token table or two.

Parameter counts follow from the choices alone, so the readers only have to get the choices right;
the unit tests compare them with the published checkpoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from csconform.perf.models.layer import Layer, active_params, total_params

NORMS = ("layer", "rms")
"""``layer``: LayerNorm (a scale and a shift per feature; ``norm_bias=False`` drops the shift);
``rms``: RMSNorm (a scale per feature)."""


@dataclass(frozen=True)
class Attention:
    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool
    output_bias: bool
    window: int = 0
    """Keys a query attends to at most (sliding-window attention); 0: the whole sequence."""
    windowed_layers: tuple[int, ...] | None = None
    """The blocks that use the window (``None``: all of them, when there is a window)."""
    qk_norm: bool = False
    """A norm over each head's queries and keys (one scale (and shift) of head_dim features each)."""


@dataclass(frozen=True)
class MLP:
    width: int
    gated: bool
    bias: bool
    experts: int = 1
    """Routed experts (a mixture of experts when > 1); each token goes to ``experts_per_token``."""
    experts_per_token: int = 1
    shared_experts: int = 0
    """Experts every token goes through besides the routed ones."""
    router_bias: bool = False


@dataclass(frozen=True)
class Transformer:
    layers: int
    width: int
    vocab: int
    tokens: int
    attention: Attention
    mlp: MLP
    norm: str = "layer"
    norm_bias: bool = True
    block_norms: int = 2
    """1: attention and MLP read one norm (in parallel, GPT-J, Falcon-7B, Phi); 2: a norm each."""
    position_table: int = 0
    """Rows of a learned position table (0: positions without parameters: rotary, ALiBi, sinusoids)."""
    relative_position_buckets: int = 0
    """Buckets of a learned relative-position bias (one value per head), shared by all blocks (0: none)."""
    token_types: int = 0
    embedding_norm: bool = False
    embedding_width: int = 0
    """Width of the token embedding when it differs from the model's (OPT-350m projects in and out)."""
    final_norm: bool = True
    post_norms: bool = False
    """A norm on the attention's and on the MLP's output too, before each residual add (Gemma 2: four per block)."""
    cross_attention_tokens: int = 0
    """Encoder positions every block attends to after its self-attention, through a norm and a
    cross-attention of its own (an encoder-decoder's decoder; 0: none)."""


def trunk(t: Transformer) -> list[Layer]:
    """Embeddings, the blocks and the final norm (no output head)."""
    d, n = t.width, t.tokens
    table = t.embedding_width or d
    layers = [Layer("embedding", t.vocab, table, n, name="token_embeddings", group="embeddings"), *_positions(t)]
    if t.token_types:
        layers.append(Layer("embedding", t.token_types, d, n, name="token_type_embeddings", group="embeddings"))
    if t.embedding_width:
        layers.append(Layer("dense", table, d, n, name="project_in", bias=False, group="embeddings"))
    if t.embedding_norm:
        layers.append(_norm(t, d, n, "embeddings.ln", "embeddings"))
    return layers + blocks(t)


def blocks(t: Transformer) -> list[Layer]:
    """The blocks and the final norm, over inputs embedded already (a vision transformer embeds image
    patches, not tokens)."""
    layers = []
    for index in range(t.layers):
        layers += _block(t, index)
    if t.final_norm:
        layers.append(_norm(t, t.width, t.tokens, "ln_f", "head"))
    return layers


def encoder_decoder(encoder: Transformer, decoder: Transformer, *, shared_embedding: bool) -> list[Layer]:
    """An encoder-decoder without its head (:func:`lm_head` of ``decoder``): the token table (one both
    sequences look up when ``shared_embedding``, else one each), each stack's positions, the encoder's
    blocks and final norm, then the decoder's blocks (attending to ``decoder.cross_attention_tokens``
    encoder positions) and final norm. Names and kernel groups start with ``encoder.`` or ``decoder.``."""
    d = encoder.width
    if shared_embedding:
        both = encoder.tokens + decoder.tokens
        tables = [Layer("embedding", encoder.vocab, d, both, name="token_embeddings", group="embeddings")]
    else:
        tables = [
            Layer("embedding", t.vocab, d, t.tokens, name=f"{stack}.token_embeddings", group="embeddings")
            for stack, t in (("encoder", encoder), ("decoder", decoder))
        ]
    layers = [*tables, *_positions(encoder, "encoder."), *_positions(decoder, "decoder.")]
    for index in range(encoder.layers):
        layers += _block(encoder, index, "encoder.")
    layers.append(_norm(encoder, d, encoder.tokens, "encoder.ln_f", "encoder.ln_f"))
    for index in range(decoder.layers):
        layers += _block(decoder, index, "decoder.")
    layers.append(_norm(decoder, d, decoder.tokens, "decoder.ln_f", "head"))
    return layers


def lm_head(t: Transformer, *, tied: bool, bias: bool) -> list[Layer]:
    """The output projection to the vocabulary (through OPT's projection when the embedding is narrower),
    scored by the softmax cross-entropy over the vocabulary."""
    layers = []
    table = t.embedding_width or t.width
    if t.embedding_width:
        layers.append(Layer("dense", t.width, table, t.tokens, name="project_out", bias=False, group="head"))
    head = Layer("dense", table, t.vocab, t.tokens, name="lm_head", bias=bias, tied=tied, group="head", scored=True)
    return [*layers, head]


def masked_lm_head(t: Transformer, *, tied: bool, transform_bias: bool = True, bias: bool = True) -> list[Layer]:
    """BERT's and RoBERTa's masked-LM head: a dense transform, a LayerNorm, the (tied) decoder with its bias."""
    d, n = t.width, t.tokens
    return [
        Layer("dense", d, d, n, name="mlm.transform", bias=transform_bias, group="head"),
        Layer("layer_norm", d, d, n, name="mlm.ln", group="head"),
        Layer("dense", d, t.vocab, n, name="mlm.decoder", bias=bias, tied=tied, group="head", scored=True),
    ]


def pooler(t: Transformer, bias: bool = True) -> list[Layer]:
    """BERT's pooler: a dense layer over the first token."""
    return [Layer("dense", t.width, t.width, 1, name="pooler", bias=bias, group="head")]


def classifier(
    t: Transformer, classes: int, name: str = "classifier", bias: bool = True, tokens: int = 1
) -> list[Layer]:
    """A classification layer over the pooled first token (sequence classification, next-sentence
    prediction), or over ``tokens`` tokens (token classification)."""
    return [Layer("dense", t.width, classes, tokens, name=name, bias=bias, group="head", scored=True)]


def moe_note(layers: Sequence[Layer], experts: int, per_token: int) -> str:
    """The note on a mixture of experts a reader adds to its model: what is counted where."""
    total, active = total_params(layers), active_params(layers)
    return (
        f"mixture of experts: {total:,} parameters in all ({experts} experts per block), {active:,} active per token "
        f"(top {per_token}); weight streaming moves every expert's weights each step, compute uses the active ones"
    )


def _norm(t: Transformer, features: int, tokens: int, name: str, group: str) -> Layer:
    bias = t.norm == "layer" and t.norm_bias
    return Layer("layer_norm", features, features, tokens, name=name, group=group, bias=bias)


def _positions(t: Transformer, prefix: str = "") -> list[Layer]:
    """A learned position table and a relative-position bias (one value per head and bucket), when ``t`` has them."""
    layers, n = [], t.tokens
    if t.position_table:
        layers.append(Layer("embedding", t.position_table, t.width, n, name=f"{prefix}position_embeddings"))
    if t.relative_position_buckets:
        buckets, heads = t.relative_position_buckets, t.attention.heads
        layers.append(Layer("embedding", buckets, heads, n, name=f"{prefix}relative_position_bias"))
    return [replace(layer, group="embeddings") for layer in layers]


def _attention(t: Transformer, name: str, group: str, window: int = 0, kv_tokens: int = 0) -> Layer:
    a, d = t.attention, t.width
    return Layer(
        "attention",
        d,
        d,
        t.tokens,
        name=name,
        heads=a.heads,
        group=group,
        bias=a.qkv_bias,
        output_bias=a.output_bias,
        q_features=a.heads * a.head_dim,
        kv_features=a.kv_heads * a.head_dim,
        window=window,
        kv_tokens=kv_tokens,
    )


def _block(t: Transformer, index: int, prefix: str = "") -> list[Layer]:
    g, d, n, a, m = f"{prefix}block{index}", t.width, t.tokens, t.attention, t.mlp
    windowed = a.window and (a.windowed_layers is None or index in a.windowed_layers)
    layers = [_norm(t, d, n, f"{g}.ln1", g), _attention(t, f"{g}.attn", g, window=a.window if windowed else 0)]
    if t.cross_attention_tokens:
        layers.append(_norm(t, d, n, f"{g}.ln_cross", g))
        layers.append(_attention(t, f"{g}.cross_attn", g, kv_tokens=t.cross_attention_tokens))
    if a.qk_norm:
        layers += [
            _norm(t, a.head_dim, n * a.heads, f"{g}.q_norm", g),
            _norm(t, a.head_dim, n * a.kv_heads, f"{g}.k_norm", g),
        ]
    if t.post_norms:
        layers.append(_norm(t, d, n, f"{g}.attn_out_ln", g))
    if t.block_norms == 2:
        layers.append(_norm(t, d, n, f"{g}.ln2", g))
    up = 2 * m.width if m.gated else m.width
    if m.experts > 1:
        layers.append(Layer("dense", d, m.experts, n, name=f"{g}.router", bias=m.router_bias, group=g))
        layers += _ffn(f"{g}.experts", g, d, up, m, n, m.experts, m.experts_per_token)
        if m.shared_experts:
            layers += _ffn(f"{g}.shared_experts", g, d, up, m, n, m.shared_experts, m.shared_experts)
    else:
        layers += _ffn(g, g, d, up, m, n, 1, 1)
    if t.post_norms:
        layers.append(_norm(t, d, n, f"{g}.mlp_out_ln", g))
    return layers


def _ffn(prefix: str, g: str, d: int, up: int, m: MLP, tokens: int, experts: int, per_token: int) -> list[Layer]:
    """The two dense layers of an MLP (of ``experts`` experts, ``per_token`` of them used per token), in group ``g``."""
    b = m.bias
    return [
        Layer(
            "dense", d, up, tokens, name=f"{prefix}.fc1", bias=b, group=g, experts=experts, experts_per_token=per_token
        ),
        Layer(
            "dense",
            m.width,
            d,
            tokens,
            name=f"{prefix}.fc2",
            bias=b,
            group=g,
            experts=experts,
            experts_per_token=per_token,
        ),
    ]
