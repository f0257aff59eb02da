"""Model descriptions from Hugging Face style configs: a ``config.json``, or the same fields as YAML.

A config names its family in ``model_type`` and its shape in the usual fields (``n_layer`` or
``num_hidden_layers``, ``n_embd`` or ``hidden_size``, ...). :func:`model_from_config` reads the
architectural choices into a :class:`~csconform.perf.transformer.Transformer` and returns a
:class:`ModelSpec`, the list of :class:`~csconform.perf.costs.Layer` records the performance model
plans. Families (what each reads beyond the sizes, as Hugging Face's own model code builds it):

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
Encoder-decoder models (``t5``, ``bart``, ...) are refused with an :class:`UnsupportedModelError`
that says so: their encoder and decoder run over sequences of different lengths with
cross-attention between them, which this performance model does not describe.

Size fields are required (a real ``config.json`` has them); optional fields take Hugging Face's
defaults. Anything missing, contradictory, non-finite or out of range is a
:class:`~csconform.errors.ModelConfigError` whose one-line message names the file and the key; an
unknown ``model_type`` is an :class:`~csconform.errors.UnknownNameError` listing the known ones.
A file that is not UTF-8 text (binary, UTF-16), not JSON/YAML, nested absurdly deep, or gives a key
twice (JSON and YAML readers silently keep the last) is refused the same way, never with a traceback.

An optional ``"csconform"`` object carries what the zoo knows beyond the architecture: the published
parameter count and its source, a default batch and sequence length, and aliases.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csconform.documents import read_document
from csconform.errors import ModelConfigError, UnknownNameError, UnsupportedModelError
from csconform.perf.costs import Layer, active_params, model_flops_per_sample, total_params
from csconform.perf.transformer import (
    MLP,
    Attention,
    Transformer,
    classifier,
    lm_head,
    masked_lm_head,
    pooler,
    trunk,
)

DEFAULT_BATCH = 256
ACTIVATIONS = (
    "gelu",
    "gelu_new",
    "gelu_fast",
    "gelu_pytorch_tanh",
    "gelu_python",
    "quick_gelu",
    "relu",
    "silu",
    "swish",
    "tanh",
    "sigmoid",
)
# Upper bounds far above any published model; they keep a mistyped config from building millions of layers.
MAX_LAYERS = 2048
MAX_WIDTH = 2**20
MAX_SEQUENCE = 2**24
MAX_FILE_BYTES = 16 * 2**20  # a config.json is a few kB; anything this large is not one
ENCODER_DECODER = (
    "t5",
    "mt5",
    "umt5",
    "longt5",
    "switch_transformers",
    "bart",
    "mbart",
    "pegasus",
    "pegasus_x",
    "marian",
    "blenderbot",
    "blenderbot-small",
    "led",
    "bigbird_pegasus",
    "prophetnet",
    "fsmt",
    "m2m_100",
    "nllb-moe",
    "plbart",
    "whisper",
    "encoder-decoder",
)

FORMER_FORMATS = {
    "phi-msft": "the former remote-code format of microsoft/phi-1, phi-1_5 and phi-2; their config.json on the hub "
    "now has model_type phi",
    "RefinedWeb": "Falcon's former remote-code format; tiiuae's config.json on the hub now has model_type falcon",
    "RefinedWebModel": "Falcon's former remote-code format; tiiuae's config.json on the hub now has model_type falcon",
}


@dataclass(frozen=True)
class ModelSpec:
    """A described model: its layers plus the published figures we check them against.

    ``config`` is the configuration it was built from (``None`` for a hand-written layer list) and
    ``rebuild`` builds the same model at another sequence length; ``notes`` say how the reader read
    the config where a choice was made (which field governs, which heads are counted, how a mixture
    of experts is counted).
    """

    name: str
    layers: tuple[Layer, ...]
    seq_len: int | None
    default_batch: int
    published_params: float
    source: str
    family: str = "described"
    max_seq_len: int | None = None
    notes: tuple[str, ...] = ()
    config: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    rebuild: Callable[[int], ModelSpec] | None = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> int:
        """Every trainable parameter (every expert of a mixture of experts)."""
        return total_params(self.layers)

    @property
    def active_params(self) -> int:
        """Parameters one token goes through (the same as ``params`` unless experts are routed)."""
        return active_params(self.layers)

    @property
    def flops_per_sample(self) -> float:
        """Forward + backward FLOPs for one sample (one sequence or one image)."""
        return model_flops_per_sample(self.layers)

    def at_seq_len(self, seq_len: int) -> ModelSpec:
        """The same model at another sequence length (models built from a config only)."""
        if self.rebuild is None:
            raise ModelConfigError("seq_len applies to models built from a config; build the layers at that length")
        return self.rebuild(seq_len)


# --- reading a file ---------------------------------------------------------------------------------


def read_config(path: str | Path) -> dict[str, Any]:
    """A config file's fields: YAML for ``.yaml``/``.yml``, JSON otherwise, read by the one document
    reader (:mod:`csconform.documents`): a file that cannot be read as a mapping of fields is an
    :class:`~csconform.errors.UnreadableDocumentError` naming the file and, where it can, the line."""
    return read_document(path, what="model config", max_bytes=MAX_FILE_BYTES).data


def load_model_config(path: str | Path, seq_len: int | None = None) -> ModelSpec:
    """Read ``path`` and build its model (named after the file unless the config names it)."""
    return model_from_config(read_config(path), seq_len=seq_len, name=Path(path).stem, source=str(path))


# --- typed access to fields -------------------------------------------------------------------------


def shown(value: Any) -> str:
    """``value`` for a one-line message: its repr, shortened (an integer too long to print is described)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Fields:
    """Typed access to a config's fields; every problem names the key (``prefix`` + field) and the source.

    ``notes`` collects what a reader decided where a config leaves room (legacy fields, defaults)."""

    def __init__(self, config: Any, source: str | None = None, prefix: str = "") -> None:
        self.source, self.prefix = source, prefix
        if not isinstance(config, Mapping):
            block = prefix.rstrip(".")
            what = f"field {block}" if block else "a model config"
            message = f"{what} must be an object of fields, got {type(config).__name__}"
            raise ModelConfigError(message, source=source, key=block or None)
        self.config = config
        self.notes: list[str] = []

    def error(self, message: str, key: str | None = None, kind: type[ModelConfigError] = ModelConfigError):
        return kind(message, source=self.source, key=None if key is None else self.prefix + key)

    def key(self, name: str) -> str:
        return self.prefix + name

    def present(self, names: Sequence[str]) -> list[tuple[str, Any]]:
        return [(n, self.config[n]) for n in names if n in self.config and self.config[n] is not None]

    def integer(
        self, quantity: str, names: Sequence[str], default: int | None = None, minimum: int = 1, limit: int = 2**24
    ) -> int:
        """The one value of ``quantity`` spelled any of ``names``; spellings that disagree are refused."""
        present = self.present(names)
        for name, value in present:
            if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= limit:
                raise self.error(
                    f"field {self.key(name)} ({quantity}) must be an integer in {minimum}..{limit}, got {shown(value)}",
                    name,
                )
        values = {value for _, value in present}
        if len(values) > 1:
            spelled = ", ".join(f"{self.key(n)}={v}" for n, v in present)
            raise self.error(f"contradictory fields for the {quantity}: {spelled}", present[0][0])
        if values:
            return values.pop()
        if default is None:
            raise self.error(f"missing field {' or '.join(self.key(n) for n in names)} (the {quantity})", names[0])
        return default

    def labels(self, default: int) -> int:
        """Output classes: ``num_labels``, else the size of ``id2label``, else ``default``."""
        id2label = self.config.get("id2label")
        if id2label is not None and not isinstance(id2label, Mapping):
            raise self.error(
                f"field {self.key('id2label')} must be an object, got {type(id2label).__name__}", "id2label"
            )
        return self.integer("number of labels", ("num_labels",), default=len(id2label or {}) or default, limit=2**24)

    def check_flag(self, name: str) -> None:
        """Refuse ``name`` given as anything but true or false (absent and null are fine)."""
        value = self.config.get(name)
        if value is not None and not isinstance(value, bool):
            raise self.error(f"field {self.key(name)} must be true or false, got {shown(value)}", name)

    def flag(self, name: str, default: bool) -> bool:
        self.check_flag(name)
        value = self.config.get(name)
        return default if value is None else value

    def check_number(self, name: str, low: float, high: float) -> None:
        """Refuse ``name`` given as anything but a number in [low, high] (a field that changes no count)."""
        value = self.config.get(name)
        if value is None:
            return
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise self.error(f"field {self.key(name)} must be a number in [{low}, {high}], got {shown(value)}", name)

    def choice(self, name: str, default: str | None, choices: Sequence[str | None]) -> str | None:
        value = self.config.get(name, default)
        if value not in choices:
            known = ", ".join(str(c) for c in choices)
            raise self.error(f"field {self.key(name)} must be one of {known}, got {shown(value)}", name)
        return value

    def check_activation(self, name: str) -> None:
        """Refuse an unknown activation (absent and null are fine; the choice changes no count)."""
        value = self.config.get(name)
        if value is not None and (not isinstance(value, str) or value not in ACTIVATIONS):
            raise self.error(
                f"field {self.key(name)}: unknown activation {shown(value)}; known: {', '.join(ACTIVATIONS)}", name
            )

    def strings(self, name: str) -> list[str]:
        value = self.config.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"field {self.key(name)} must be a list of strings, got {shown(value)}", name)
        return value

    def integers(self, name: str, minimum: int = 1, limit: int = 2**22) -> list[int]:
        value = self.config.get(name)
        if value is None:
            raise self.error(f"missing field {self.key(name)}", name)
        if (
            not isinstance(value, list)
            or not value
            or len(value) > MAX_LAYERS
            or not all(isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= limit for v in value)
        ):
            raise self.error(f"field {self.key(name)} must be a non-empty list of integers in {minimum}..{limit}", name)
        return value


# --- shared pieces of the transformer readers -----------------------------------------------------

WIDTH = ("n_embd", "hidden_size")
LAYERS = ("n_layer", "num_hidden_layers")
HEADS = ("n_head", "num_attention_heads")


@dataclass(frozen=True)
class Shape:
    """The sizes every transformer config states."""

    layers: int
    width: int
    heads: int
    vocab: int
    positions: int
    tokens: int


def shape(
    f: Fields,
    positions: Sequence[str],
    seq_len: int | None,
    *,
    width: Sequence[str] = WIDTH,
    layers: Sequence[str] = LAYERS,
    heads: Sequence[str] = HEADS,
    positions_default: int | None = None,
    positions_limit: bool = True,
) -> Shape:
    """Sizes, and the sequence length to plan at (``seq_len``, else the longest the config allows).

    ``positions_limit=False`` is for position schemes with no table (ALiBi): the config's length
    is then the default, not a limit."""
    n_layers = f.integer("number of layers", layers, limit=MAX_LAYERS)
    n_width = f.integer("model width", width, limit=MAX_WIDTH)
    n_heads = f.integer("number of attention heads", heads, limit=MAX_WIDTH)
    vocab = f.integer("vocabulary size", ("vocab_size",))
    longest = f.integer("maximum sequence length", positions, default=positions_default, limit=MAX_SEQUENCE)
    tokens = longest if seq_len is None else seq_len
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_SEQUENCE:
        raise f.error(f"seq_len must be a positive integer up to {MAX_SEQUENCE}, got {shown(tokens)}")
    if positions_limit and tokens > longest:
        spelled = next((n for n in positions if f.config.get(n) is not None), positions[0])
        raise f.error(f"seq_len {tokens} is longer than the config's {f.key(spelled)} ({longest})", spelled)
    return Shape(n_layers, n_width, n_heads, vocab, longest, tokens)


def even_heads(f: Fields, s: Shape) -> int:
    """The head width when heads split the model width evenly (refused otherwise)."""
    if s.heads > s.width or s.width % s.heads:
        raise f.error(
            f"contradictory fields: the model width ({s.width}) must be a multiple of the number of attention "
            f"heads ({s.heads})",
            f.present(HEADS)[0][0],  # heads are required, so one spelling holds them
        )
    return s.width // s.heads


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
        return [Layer("dense", t.width, labels, 1, name="score", bias=False, group="head")]
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
    n_ctx = f.config.get("n_ctx")
    legacy = n_ctx is not None and not f.present(("n_positions", "max_position_embeddings"))
    s = shape(f, ("n_positions", "max_position_embeddings"), seq_len, positions_default=1024 if legacy else None)
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
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, even_heads(f, s), True, True),
        MLP(ffn, gated=False, bias=True),
        position_table=s.positions,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def _gptj(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, ("n_positions", "max_position_embeddings"), seq_len)
    f.check_activation("activation_function")
    dim = even_heads(f, s)
    rotary_check(f, dim)
    ffn = f.integer("MLP width", ("n_inner",), default=4 * s.width, limit=4 * MAX_WIDTH)
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, dim, False, False),
        MLP(ffn, gated=False, bias=True),
        block_norms=1,
    )
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=True)


def _gpt_neox(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, ("max_position_embeddings",), seq_len)
    f.check_activation("hidden_act")
    f.check_number("rotary_pct", 0.0, 1.0)
    f.check_flag("use_parallel_residual")  # attention and MLP in parallel or not, each with its own LN
    bias = f.flag("attention_bias", True)
    ffn = f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH)
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, even_heads(f, s), bias, bias),
        MLP(ffn, False, True),
    )
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=False)


# transformers' MistralConfig and MixtralConfig default num_key_value_heads to 8, Qwen2Config to 32 (not to
# the number of attention heads, as LlamaConfig and PhiConfig do)
KV_HEADS_DEFAULT = {"mistral": 8, "mixtral": 8, "qwen2": 32}


def _llama_like(f: Fields, seq_len: int | None, family: str) -> list[Layer]:
    """LLaMA and its descendants: RMSNorm, gated SiLU MLP, grouped-query attention, rotary positions."""
    positions: tuple[str, ...] = ("max_position_embeddings",)
    if family == "llama" and not f.present(positions) and f.present(("max_sequence_length",)):
        positions = ("max_sequence_length",)
        f.notes.append(
            "max_sequence_length (a LLaMA-1 conversion field transformers ignores) is the longest sequence, as the "
            "config has no max_position_embeddings; rotary positions have no table, so it does not change the count"
        )
    elif family == "llama" and f.present(("max_sequence_length",)):
        f.notes.append("max_position_embeddings governs; max_sequence_length is a LLaMA-1 field transformers ignores")
    s = shape(f, positions, seq_len)
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
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, groups, dim, qkv_bias, output_bias, window=window, windowed_layers=windowed),
        MLP(ffn, gated=True, bias=mlp_bias, experts=experts, experts_per_token=per_token),
        norm="rms",
    )
    layers = trunk(t) + decoder_head(f, t, tied_default=False, bias=False)
    if experts > 1:
        f.notes.append(moe_note(layers, experts, per_token))
    return layers


def moe_note(layers: Sequence[Layer], experts: int, per_token: int) -> str:
    total, active = total_params(layers), active_params(layers)
    return (
        f"mixture of experts: {total:,} parameters in all ({experts} experts per block), {active:,} active per token "
        f"(top {per_token}); weight streaming moves every expert's weights each step, compute uses the active ones"
    )


def _phi(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, ("max_position_embeddings",), seq_len)
    f.check_activation("hidden_act")
    f.check_number("partial_rotary_factor", 0.0, 1.0)  # rotates part of each head: no parameters either way
    dim = head_dim(f, s)
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, kv_heads(f, s.heads), dim, True, True, qk_norm=f.flag("qk_layernorm", False)),
        MLP(f.integer("MLP width", ("intermediate_size",), limit=4 * MAX_WIDTH), gated=False, bias=True),
        block_norms=1,
    )
    return trunk(t) + decoder_head(f, t, tied_default=False, bias=True)


def _falcon(f: Fields, seq_len: int | None) -> list[Layer]:
    absent = not f.present(("max_position_embeddings",))
    s = shape(
        f,
        ("max_position_embeddings",),
        seq_len,
        width=("hidden_size", "n_embed"),
        layers=("num_hidden_layers", "n_layer"),
        heads=("num_attention_heads", "n_head"),
        positions_default=2048,
    )
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
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, groups, dim, bias, bias),
        MLP(ffn, gated=False, bias=bias),
        block_norms=norms,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def _opt(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(f, ("max_position_embeddings",), seq_len)
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
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, even_heads(f, s), bias, bias),
        MLP(f.integer("MLP width", ("ffn_dim",), limit=4 * MAX_WIDTH), gated=False, bias=bias),
        position_table=s.positions + 2,
        embedding_width=0 if projection == s.width else projection,
        final_norm=final_norm,
    )
    return trunk(t) + decoder_head(f, t, tied_default=True, bias=False)


def _bloom(f: Fields, seq_len: int | None) -> list[Layer]:
    s = shape(
        f,
        ("seq_length",),
        seq_len,
        width=("hidden_size", "n_embed"),
        layers=("num_hidden_layers", "n_layer"),
        heads=("num_attention_heads", "n_head"),
        positions_default=2048,
        positions_limit=False,
    )
    stated = "seq_length, the training length" if f.present(("seq_length",)) else "no seq_length given"
    f.notes.append(
        f"ALiBi positions: no position table; {s.positions} ({stated}) is the default sequence length, not a limit"
    )
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, even_heads(f, s), True, True),
        MLP(4 * s.width, gated=False, bias=True),  # BloomMLP is always 4d wide
        embedding_norm=True,
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
    s = shape(f, ("max_position_embeddings",), seq_len)
    f.check_activation("hidden_act")
    t = Transformer(
        s.layers,
        s.width,
        s.vocab,
        s.tokens,
        Attention(s.heads, s.heads, even_heads(f, s), True, True),
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
    "bert": functools.partial(_encoder, family="bert"),
    "roberta": functools.partial(_encoder, family="roberta"),
    "resnet": _resnet,
    "mlp": _mlp,
}
SEQUENCE_FAMILIES = tuple(name for name in FAMILIES if name not in ("resnet", "mlp"))


def model_from_config(
    config: Mapping[str, Any], seq_len: int | None = None, name: str | None = None, *, source: str | None = None
) -> ModelSpec:
    """Build the model a config describes, at ``seq_len`` (default: its own default, else its maximum).

    ``source`` (the file, when there is one) prefixes every error message."""
    f = Fields(config, source)
    family = config.get("model_type")
    if family is None:
        raise f.error(f"missing field model_type (one of {', '.join(FAMILIES)})", "model_type")
    if not isinstance(family, str):
        raise f.error(
            f"field model_type must be a string (one of {', '.join(FAMILIES)}), got {shown(family)}", "model_type"
        )
    if family in ENCODER_DECODER or (f.flag("is_encoder_decoder", False) and family not in FAMILIES):
        raise f.error(
            f"model_type {shown(family)} is an encoder-decoder model, which csconform does not model: its encoder and "
            "decoder run over inputs and targets of different lengths with cross-attention between them; plan "
            "decoder-only or encoder-only models",
            "model_type",
            UnsupportedModelError,
        )
    if family not in FAMILIES:
        message = f"unknown model_type {shown(family)}; known model types: {', '.join(FAMILIES)}"
        if family in FORMER_FORMATS:
            message += f" ({family} is {FORMER_FORMATS[family]})"
        raise UnknownNameError(f"{source}: {message}" if source else message)
    extra = config.get("csconform") or {}
    x = Fields(extra, source, prefix="csconform.")
    if seq_len is None and family in SEQUENCE_FAMILIES:
        seq_len = x.integer("default sequence length", ("default_seq_len",), default=0, minimum=0) or None
    layers = tuple(FAMILIES[family](f, seq_len))
    spec_name = extra.get("name") or name
    if spec_name is not None and not isinstance(spec_name, str):
        raise x.error(f"field csconform.name must be a string, got {shown(spec_name)}", "name")
    if not spec_name:
        hub_name = config.get("_name_or_path")
        spec_name = hub_name if isinstance(hub_name, str) and hub_name else family
    published = extra.get("published_params", total_params(layers))
    if not isinstance(published, int | float) or isinstance(published, bool) or not 0 < published < math.inf:
        raise x.error(
            f"field csconform.published_params must be a positive number, got {shown(published)}", "published_params"
        )
    described = extra.get("source", "a model config")
    if not isinstance(described, str):
        raise x.error(f"field csconform.source must be a string, got {shown(described)}", "source")
    sequence = family in SEQUENCE_FAMILIES
    return ModelSpec(
        name=spec_name,
        layers=layers,
        seq_len=max(layer.tokens for layer in layers) if sequence else None,
        default_batch=x.integer("default batch", ("default_batch",), default=DEFAULT_BATCH, limit=2**24),
        published_params=float(published),
        source=described,
        family=family,
        max_seq_len=_longest(f, family) if sequence else None,
        notes=tuple(f.notes),
        config=dict(config),
        rebuild=functools.partial(_rebuild, dict(config), spec_name, source),
    )


def _longest(f: Fields, family: str) -> int | None:
    """The longest sequence the config allows (``None`` when nothing limits it: ALiBi)."""
    if family == "bloom":
        return None
    names = {
        "gpt2": ("n_positions", "max_position_embeddings"),
        "gptj": ("n_positions", "max_position_embeddings"),
        "falcon": ("max_position_embeddings",),
    }.get(family, ("max_position_embeddings",))
    if family == "llama" and not f.present(names):
        names = ("max_sequence_length",)
    default = 2048 if family == "falcon" else 1024 if family == "gpt2" else None
    return f.integer("maximum sequence length", names, default=default, limit=MAX_SEQUENCE)


def _rebuild(config: dict[str, Any], name: str, source: str | None, seq_len: int) -> ModelSpec:
    return model_from_config(config, seq_len=seq_len, name=name, source=source)
