"""Model descriptions from Hugging Face style configs: a ``config.json``, or the same fields as YAML.

A config names its family in ``model_type`` and its shape in the usual fields (``n_layer`` or
``num_hidden_layers``, ``n_embd`` or ``hidden_size``, ...). :func:`model_from_config` turns it into a
:class:`ModelSpec`, the list of :class:`~csconform.perf.costs.Layer` records the performance model
plans. Families:

==============  ===============================================================================
``gpt2``        learned positions, pre-LN blocks, MLP d -> ``n_inner`` (4d) -> d, tied LM head
                (GPT-2, and GPT-3-style models such as Cerebras-GPT, which use this type)
``gptj``        rotary positions, attention and MLP in parallel from one LN, no attention biases,
                untied LM head with a bias
``gpt_neox``    rotary positions, two LNs per block, biased projections, untied output layer
``llama``       rotary positions, RMSNorm, gated SiLU MLP (gate and up d -> ffn, down ffn -> d),
                grouped-query attention (``num_key_value_heads``), no biases, untied LM head
``bert``        learned positions and token types, encoder; the heads follow ``architectures``:
                ``*ForSequenceClassification`` a pooler and a classifier, otherwise the pre-training
                heads (masked LM tied to the word embedding, next-sentence prediction)
``resnet``      Hugging Face ResNetConfig (bottleneck blocks); ``image_size`` (default 224) is ours
``mlp``         ours: a fully connected network, ``layer_widths`` from input to output
==============  ===============================================================================

Size fields are required (a real ``config.json`` always has them); fields that Hugging Face treats as
optional take Hugging Face's defaults (``tie_word_embeddings``, ``n_inner``, ``num_key_value_heads``,
``type_vocab_size``, ...). Anything missing, contradictory or out of range is an
:class:`~csconform.errors.InvalidInputError` whose one-line message names the field; an unknown
``model_type`` is an :class:`~csconform.errors.UnknownNameError` listing the known ones.

An optional ``"csconform"`` object carries what the zoo knows beyond the architecture: the published
parameter count and its source, a default batch and sequence length, and aliases.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import InvalidInputError, UnknownNameError
from csconform.perf.costs import Layer, model_flops_per_sample, total_params

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


@dataclass(frozen=True)
class ModelSpec:
    """A described model: its layers plus the published figures we check them against.

    ``config`` is the configuration it was built from (``None`` for a hand-written layer list), so
    the same model can be rebuilt at another sequence length.
    """

    name: str
    layers: tuple[Layer, ...]
    seq_len: int | None
    default_batch: int
    published_params: float
    source: str
    family: str = "described"
    max_seq_len: int | None = None
    config: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> int:
        return total_params(self.layers)

    @property
    def flops_per_sample(self) -> float:
        """Forward + backward FLOPs for one sample (one sequence or one image)."""
        return model_flops_per_sample(self.layers)

    def at_seq_len(self, seq_len: int) -> ModelSpec:
        """The same model at another sequence length (models built from a config only)."""
        if self.config is None:
            raise InvalidInputError("seq_len applies to models built from a config; build the layers at that length")
        return model_from_config(self.config, seq_len=seq_len, name=self.name)


# --- reading a config -------------------------------------------------------------------------------


def read_config(path: str | Path) -> dict[str, Any]:
    """Load a config file: YAML (safe loading) for ``.yaml``/``.yml``, JSON otherwise."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) if path.suffix.lower() in (".yaml", ".yml") else json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except yaml.YAMLError as error:
        raise InvalidInputError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}: a model config must be an object of fields, got {type(data).__name__}")
    return data


def load_model_config(path: str | Path, seq_len: int | None = None) -> ModelSpec:
    """Read ``path`` and build its model (named after the file unless the config names it)."""
    return model_from_config(read_config(path), seq_len=seq_len, name=Path(path).stem)


class _Fields:
    """Typed access to a config's fields; every problem names the field."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise InvalidInputError(f"a model config must be an object of fields, got {type(config).__name__}")
        self.config = config

    def _present(self, names: Sequence[str]) -> list[tuple[str, Any]]:
        return [(n, self.config[n]) for n in names if n in self.config and self.config[n] is not None]

    def integer(
        self, quantity: str, names: Sequence[str], default: int | None = None, minimum: int = 1, limit: int = 2**24
    ) -> int:
        """The one value of ``quantity`` spelled any of ``names``; spellings that disagree are refused."""
        present = self._present(names)
        for name, value in present:
            if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= limit:
                raise InvalidInputError(
                    f"field {name} ({quantity}) must be an integer in {minimum}..{limit}, got {value!r}"
                )
        values = {value for _, value in present}
        if len(values) > 1:
            spelled = ", ".join(f"{n}={v}" for n, v in present)
            raise InvalidInputError(f"contradictory fields for the {quantity}: {spelled}")
        if values:
            return values.pop()
        if default is None:
            raise InvalidInputError(f"missing field {' or '.join(names)} (the {quantity})")
        return default

    def labels(self, default: int) -> int:
        """Output classes: ``num_labels``, else the size of ``id2label``, else ``default``."""
        id2label = self.config.get("id2label")
        if id2label is not None and not isinstance(id2label, Mapping):
            raise InvalidInputError(f"field id2label must be an object, got {type(id2label).__name__}")
        return self.integer("number of labels", ("num_labels",), default=len(id2label or {}) or default, limit=2**24)

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise InvalidInputError(f"field {name} must be true or false, got {value!r}")
        return value

    def number(self, name: str, default: float, low: float, high: float) -> float:
        value = self.config.get(name, default)
        if value is None:
            return default
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise InvalidInputError(f"field {name} must be a number in [{low}, {high}], got {value!r}")
        return float(value)

    def activation(self, names: Sequence[str], default: str) -> str:
        present = self._present(names)
        for name, value in present:
            if not isinstance(value, str) or value not in ACTIVATIONS:
                raise InvalidInputError(f"field {name}: unknown activation {value!r}; known: {', '.join(ACTIVATIONS)}")
        values = {value for _, value in present}
        if len(values) > 1:
            raise InvalidInputError(f"contradictory activation fields: {', '.join(f'{n}={v}' for n, v in present)}")
        return values.pop() if values else default

    def strings(self, name: str) -> list[str]:
        value = self.config.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInputError(f"field {name} must be a list of strings, got {value!r}")
        return value

    def integers(self, name: str, minimum: int = 1, limit: int = 2**22) -> list[int]:
        value = self.config.get(name)
        if value is None:
            raise InvalidInputError(f"missing field {name}")
        if (
            not isinstance(value, list)
            or not value
            or len(value) > MAX_LAYERS
            or not all(isinstance(v, int) and not isinstance(v, bool) and minimum <= v <= limit for v in value)
        ):
            raise InvalidInputError(f"field {name} must be a non-empty list of integers in {minimum}..{limit}")
        return value


# --- transformer pieces -----------------------------------------------------------------------------

WIDTH = ("n_embd", "hidden_size")
LAYERS = ("n_layer", "num_hidden_layers")
HEADS = ("n_head", "num_attention_heads")
VOCAB = ("vocab_size",)


@dataclass(frozen=True)
class _Shape:
    layers: int
    width: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    tokens: int


def _shape(f: _Fields, positions: Sequence[str], ffn: Sequence[str], ffn_default: int | None, seq_len: int | None):
    layers = f.integer("number of layers", LAYERS, limit=MAX_LAYERS)
    width = f.integer("model width", WIDTH, limit=MAX_WIDTH)
    heads = f.integer("number of attention heads", HEADS, limit=MAX_WIDTH)
    if heads > width or width % heads:
        raise InvalidInputError(
            f"contradictory fields: the model width ({width}) must be a multiple of the number of attention "
            f"heads ({heads})"
        )
    inner = f.integer(
        "MLP width", ffn, default=None if ffn_default is None else ffn_default * width, limit=4 * MAX_WIDTH
    )
    vocab = f.integer("vocabulary size", VOCAB)
    max_positions = f.integer("maximum sequence length", positions)
    tokens = max_positions if seq_len is None else seq_len
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise InvalidInputError(f"seq_len must be a positive integer, got {tokens!r}")
    if tokens > max_positions:
        spelled = next(n for n in positions if f.config.get(n) is not None)
        raise InvalidInputError(f"seq_len {tokens} is longer than the config's {spelled} ({max_positions})")
    return _Shape(layers, width, heads, inner, vocab, max_positions, tokens)


def _block(
    index: int,
    s: _Shape,
    *,
    norms: int = 2,
    gated: bool = False,
    attention_bias: bool = True,
    mlp_bias: bool = True,
    norm_bias: bool = True,
    kv_features: int = 0,
) -> list[Layer]:
    """One block: norm(s), attention with its projections, the MLP (gated: gate and up fused)."""
    g, d, t = f"block{index}", s.width, s.tokens
    layers = [Layer("layer_norm", d, d, t, name=f"{g}.ln1", group=g, bias=norm_bias)]
    layers.append(
        Layer(
            "attention", d, d, t, name=f"{g}.attn", heads=s.heads, group=g, bias=attention_bias, kv_features=kv_features
        )
    )
    if norms == 2:
        layers.append(Layer("layer_norm", d, d, t, name=f"{g}.ln2", group=g, bias=norm_bias))
    up = 2 * s.ffn if gated else s.ffn
    layers += [
        Layer("dense", d, up, t, name=f"{g}.fc1", group=g, bias=mlp_bias),
        Layer("dense", s.ffn, d, t, name=f"{g}.fc2", group=g, bias=mlp_bias),
    ]
    return layers


def _lm_head(s: _Shape, *, tied: bool, bias: bool, norm_bias: bool = True) -> list[Layer]:
    d, t = s.width, s.tokens
    return [
        Layer("layer_norm", d, d, t, name="ln_f", group="head", bias=norm_bias),
        Layer("dense", d, s.vocab, t, name="lm_head", bias=bias, tied=tied, group="head"),
    ]


def _gpt2(f: _Fields, seq_len: int | None) -> list[Layer]:
    s = _shape(f, ("n_positions", "n_ctx", "max_position_embeddings"), ("n_inner",), 4, seq_len)
    f.activation(("activation_function",), "gelu_new")
    layers = [
        Layer("embedding", s.vocab, s.width, s.tokens, name="wte", group="embeddings"),
        Layer("embedding", s.positions, s.width, s.tokens, name="wpe", group="embeddings"),
    ]
    for i in range(s.layers):
        layers += _block(i, s)
    return layers + _lm_head(s, tied=f.flag("tie_word_embeddings", True), bias=False)


def _rotary_dim_check(f: _Fields, s: _Shape) -> None:
    head_dim = s.width // s.heads
    rotary = f.integer("rotary dimension", ("rotary_dim",), default=head_dim, limit=MAX_WIDTH)
    if rotary > head_dim:
        raise InvalidInputError(f"contradictory fields: rotary_dim {rotary} exceeds the head dimension {head_dim}")


def _gptj(f: _Fields, seq_len: int | None) -> list[Layer]:
    s = _shape(f, ("n_positions", "max_position_embeddings"), ("n_inner",), 4, seq_len)
    f.activation(("activation_function",), "gelu_new")
    _rotary_dim_check(f, s)
    layers = [Layer("embedding", s.vocab, s.width, s.tokens, name="wte", group="embeddings")]
    for i in range(s.layers):
        layers += _block(i, s, norms=1, attention_bias=False)
    return layers + _lm_head(s, tied=f.flag("tie_word_embeddings", False), bias=True)


def _gpt_neox(f: _Fields, seq_len: int | None) -> list[Layer]:
    s = _shape(f, ("max_position_embeddings",), ("intermediate_size",), None, seq_len)
    f.activation(("hidden_act",), "gelu")
    f.number("rotary_pct", 0.25, 0.0, 1.0)
    f.flag("use_parallel_residual", True)
    attention_bias = f.flag("attention_bias", True)
    layers = [Layer("embedding", s.vocab, s.width, s.tokens, name="embed_in", group="embeddings")]
    for i in range(s.layers):
        layers += _block(i, s, attention_bias=attention_bias)
    return layers + _lm_head(s, tied=f.flag("tie_word_embeddings", False), bias=False)


def _llama(f: _Fields, seq_len: int | None) -> list[Layer]:
    s = _shape(f, ("max_position_embeddings",), ("intermediate_size",), None, seq_len)
    f.activation(("hidden_act",), "silu")
    head_dim = s.width // s.heads
    if f.integer("head dimension", ("head_dim",), default=head_dim, limit=MAX_WIDTH) != head_dim:
        raise InvalidInputError(
            f"contradictory fields: head_dim must equal hidden_size / num_attention_heads ({head_dim}) for this model"
        )
    kv_heads = f.integer("number of key/value heads", ("num_key_value_heads",), default=s.heads, limit=MAX_WIDTH)
    if kv_heads > s.heads or s.heads % kv_heads:
        raise InvalidInputError(
            f"contradictory fields: num_key_value_heads ({kv_heads}) must divide num_attention_heads ({s.heads})"
        )
    attention_bias = f.flag("attention_bias", False)
    mlp_bias = f.flag("mlp_bias", False)
    layers = [Layer("embedding", s.vocab, s.width, s.tokens, name="embed_tokens", group="embeddings")]
    for i in range(s.layers):
        layers += _block(
            i,
            s,
            gated=True,
            attention_bias=attention_bias,
            mlp_bias=mlp_bias,
            norm_bias=False,
            kv_features=kv_heads * head_dim,
        )
    return layers + _lm_head(s, tied=f.flag("tie_word_embeddings", False), bias=False, norm_bias=False)


def _bert(f: _Fields, seq_len: int | None) -> list[Layer]:
    s = _shape(f, ("max_position_embeddings",), ("intermediate_size",), None, seq_len)
    f.activation(("hidden_act",), "gelu")
    types = f.integer("number of token types", ("type_vocab_size",), default=2, limit=2**16)
    d, t = s.width, s.tokens
    layers = [
        Layer("embedding", s.vocab, d, t, name="word_embeddings", group="embeddings"),
        Layer("embedding", s.positions, d, t, name="position_embeddings", group="embeddings"),
        Layer("embedding", types, d, t, name="token_type_embeddings", group="embeddings"),
        Layer("layer_norm", d, d, t, name="embeddings.ln", group="embeddings"),
    ]
    for i in range(s.layers):
        layers += _block(i, s)
    if any(a.endswith("ForSequenceClassification") for a in f.strings("architectures")):
        labels = f.labels(default=2)
        return layers + [
            Layer("dense", d, d, 1, name="pooler", group="head"),
            Layer("dense", d, labels, 1, name="classifier", group="head"),
        ]
    return layers + [
        Layer("dense", d, d, 1, name="pooler", group="head"),
        Layer("dense", d, 2, 1, name="nsp", group="head"),
        Layer("dense", d, d, t, name="mlm.transform", group="head"),
        Layer("layer_norm", d, d, t, name="mlm.ln", group="head"),
        Layer("dense", d, s.vocab, t, name="mlm.decoder", tied=f.flag("tie_word_embeddings", True), group="head"),
    ]


def _resnet(f: _Fields, seq_len: int | None) -> list[Layer]:
    """Bottleneck ResNet (v1.5: the stride sits on the 3x3 conv); batch norm modeled as ``layer_norm``."""
    if seq_len is not None:
        raise InvalidInputError("a resnet has no sequence length to set")
    if f.config.get("layer_type", "bottleneck") != "bottleneck":
        raise InvalidInputError(f"field layer_type: only 'bottleneck' is supported, got {f.config['layer_type']!r}")
    depths, outs = f.integers("depths", limit=MAX_LAYERS), f.integers("hidden_sizes", limit=2**16)
    if len(depths) != len(outs):
        raise InvalidInputError(f"contradictory fields: {len(depths)} depths but {len(outs)} hidden_sizes")
    if any(o % 4 for o in outs):
        raise InvalidInputError("field hidden_sizes: bottleneck widths must be multiples of 4")
    channels = f.integer("input channels", ("num_channels",), default=3, limit=2**16)
    stem_out = f.integer("stem width", ("embedding_size",), default=64, limit=2**16)
    image = f.integer("image size", ("image_size",), default=224, limit=2**14)
    labels = f.labels(default=1000)
    if image < 4 * 2 ** (len(depths) - 1):
        raise InvalidInputError(f"field image_size {image} is too small for {len(depths)} stages")
    stem = image // 2
    layers = [
        Layer("conv", channels, stem_out, stem * stem, name="conv1", kernel_size=7, stride=2, bias=False, group="stem"),
        Layer("layer_norm", stem_out, stem_out, stem * stem, name="bn1", group="stem"),
    ]
    res, in_ch = image // 4, stem_out  # after the stride-2 stem conv and the stride-2 max pool
    for stage, (out_ch, blocks) in enumerate(zip(outs, depths, strict=True)):
        width, stage_res = out_ch // 4, res // (2**stage)
        for b in range(blocks):
            g = f"layer{stage + 1}.{b}"
            stride = 2 if (b == 0 and stage > 0) else 1
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
            if b == 0:
                layers += [
                    Layer("conv", in_ch, out_ch, out_px, name=f"{g}.downsample", stride=stride, bias=False, group=g),
                    Layer("layer_norm", out_ch, out_ch, out_px, name=f"{g}.downsample.bn", group=g),
                ]
            in_ch = out_ch
    layers.append(Layer("dense", in_ch, labels, 1, name="fc", group="head"))
    return layers


def _mlp(f: _Fields, seq_len: int | None) -> list[Layer]:
    if seq_len is not None:
        raise InvalidInputError("an mlp has no sequence length to set")
    widths = f.integers("layer_widths")
    if len(widths) < 2:
        raise InvalidInputError("field layer_widths needs at least an input and an output width")
    return [Layer("dense", a, b, name=f"fc{i + 1}") for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))]


FAMILIES: dict[str, Callable[[_Fields, int | None], list[Layer]]] = {
    "gpt2": _gpt2,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "llama": _llama,
    "bert": _bert,
    "resnet": _resnet,
    "mlp": _mlp,
}
SEQUENCE_FAMILIES = ("gpt2", "gptj", "gpt_neox", "llama", "bert")


def model_from_config(config: Mapping[str, Any], seq_len: int | None = None, name: str | None = None) -> ModelSpec:
    """Build the model a config describes, at ``seq_len`` (default: its own default, else its maximum)."""
    f = _Fields(config)
    family = config.get("model_type")
    if family is None:
        raise InvalidInputError(f"missing field model_type (one of {', '.join(FAMILIES)})")
    if not isinstance(family, str) or family not in FAMILIES:
        raise UnknownNameError(f"unknown model_type {family!r}; known model types: {', '.join(FAMILIES)}")
    extra = config.get("csconform") or {}
    if not isinstance(extra, Mapping):
        raise InvalidInputError(f"field csconform must be an object, got {type(extra).__name__}")
    x = _Fields(extra)
    if seq_len is None and family in SEQUENCE_FAMILIES:
        seq_len = x.integer("default sequence length", ("default_seq_len",), default=0, minimum=0) or None
    layers = tuple(FAMILIES[family](f, seq_len))
    spec_name = extra.get("name") or name
    if spec_name is not None and not isinstance(spec_name, str):
        raise InvalidInputError(f"field csconform.name must be a string, got {spec_name!r}")
    if not spec_name:
        hub_name = config.get("_name_or_path")
        spec_name = hub_name if isinstance(hub_name, str) and hub_name else family
    published = extra.get("published_params", total_params(layers))
    if not isinstance(published, int | float) or isinstance(published, bool) or published <= 0:
        raise InvalidInputError(f"field csconform.published_params must be a positive number, got {published!r}")
    source = extra.get("source", "a model config")
    if not isinstance(source, str):
        raise InvalidInputError(f"field csconform.source must be a string, got {source!r}")
    tokens = max(layer.tokens for layer in layers) if family in SEQUENCE_FAMILIES else None
    positions = f.integer("maximum sequence length", _POSITION_FIELDS[family]) if family in SEQUENCE_FAMILIES else None
    return ModelSpec(
        name=spec_name,
        layers=layers,
        seq_len=tokens,
        default_batch=x.integer("default batch", ("default_batch",), default=DEFAULT_BATCH, limit=2**24),
        published_params=float(published),
        source=source,
        family=family,
        max_seq_len=positions,
        config=dict(config),
    )


_POSITION_FIELDS = {
    "gpt2": ("n_positions", "n_ctx", "max_position_embeddings"),
    "gptj": ("n_positions", "max_position_embeddings"),
    "gpt_neox": ("max_position_embeddings",),
    "llama": ("max_position_embeddings",),
    "bert": ("max_position_embeddings",),
}
