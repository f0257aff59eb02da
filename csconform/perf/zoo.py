"""The model zoo: published models as :class:`~csconform.perf.costs.Layer` descriptions.

Shapes are the published ones (layers, d_model, heads, vocabulary, context); each entry also
carries its published parameter count so the unit tests can check our layer lists against it.
Transformer blocks are grouped (``group="block<i>"``) so the execution models treat one block as
one pipeline stage; ResNet bottlenecks likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from csconform.errors import InvalidInputError, UnknownNameError
from csconform.perf.costs import Layer, model_flops_per_sample, total_params


@dataclass(frozen=True)
class ModelSpec:
    """A described model: its layers plus the published figures we check them against."""

    name: str
    layers: tuple[Layer, ...]
    seq_len: int | None
    default_batch: int
    published_params: float
    source: str

    @property
    def params(self) -> int:
        return total_params(self.layers)

    @property
    def flops_per_sample(self) -> float:
        """Forward + backward FLOPs for one sample (one sequence or one image)."""
        return model_flops_per_sample(self.layers)


# --- builders ---------------------------------------------------------------------------------------


def fc_mnist() -> list[Layer]:
    """784-500-500-10 fully connected network (the example network of 002)."""
    widths = (784, 500, 500, 10)
    return [Layer("dense", a, b, name=f"fc{i + 1}") for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))]


def transformer_block(index: int, d_model: int, heads: int, tokens: int, ffn: int) -> list[Layer]:
    """Pre-LN block: LN, attention (with projections), LN, two dense layers (d -> ffn -> d)."""
    g = f"block{index}"
    return [
        Layer("layer_norm", d_model, d_model, tokens, name=f"{g}.ln1", group=g),
        Layer("attention", d_model, d_model, tokens, name=f"{g}.attn", heads=heads, group=g),
        Layer("layer_norm", d_model, d_model, tokens, name=f"{g}.ln2", group=g),
        Layer("dense", d_model, ffn, tokens, name=f"{g}.fc1", group=g),
        Layer("dense", ffn, d_model, tokens, name=f"{g}.fc2", group=g),
    ]


def gpt(n_layers: int, d_model: int, heads: int, seq_len: int, vocab: int = 50257, n_ctx: int = 1024) -> list[Layer]:
    """GPT-2/GPT-3 decoder: token + learned position embeddings, blocks, final LN, tied LM head."""
    t = seq_len
    layers = [
        Layer("embedding", vocab, d_model, t, name="wte", group="embeddings"),
        Layer("embedding", n_ctx, d_model, t, name="wpe", group="embeddings"),
    ]
    for i in range(n_layers):
        layers += transformer_block(i, d_model, heads, t, 4 * d_model)
    layers += [
        Layer("layer_norm", d_model, d_model, t, name="ln_f", group="head"),
        Layer("dense", d_model, vocab, t, name="lm_head", bias=False, tied=True, group="head"),
    ]
    return layers


def bert(
    n_layers: int, d_model: int, heads: int, seq_len: int, vocab: int = 30522, max_positions: int = 512
) -> list[Layer]:
    """BERT encoder with pooler, masked-LM head (decoder tied to the word embedding) and NSP head."""
    t = seq_len
    layers = [
        Layer("embedding", vocab, d_model, t, name="word_embeddings", group="embeddings"),
        Layer("embedding", max_positions, d_model, t, name="position_embeddings", group="embeddings"),
        Layer("embedding", 2, d_model, t, name="token_type_embeddings", group="embeddings"),
        Layer("layer_norm", d_model, d_model, t, name="embeddings.ln", group="embeddings"),
    ]
    for i in range(n_layers):
        layers += transformer_block(i, d_model, heads, t, 4 * d_model)
    layers += [
        Layer("dense", d_model, d_model, 1, name="pooler", group="head"),
        Layer("dense", d_model, 2, 1, name="nsp", group="head"),
        Layer("dense", d_model, d_model, t, name="mlm.transform", group="head"),
        Layer("layer_norm", d_model, d_model, t, name="mlm.ln", group="head"),
        Layer("dense", d_model, vocab, t, name="mlm.decoder", tied=True, group="head"),
    ]
    return layers


def resnet50(image_size: int = 224, classes: int = 1000) -> list[Layer]:
    """ResNet-50 (v1.5: the stride sits on the 3x3 conv); batch norm modeled as ``layer_norm``."""
    res = image_size // 4  # after the stride-2 stem conv and the stride-2 max pool
    stem = image_size // 2
    layers = [
        Layer("conv", 3, 64, stem * stem, name="conv1", kernel_size=7, stride=2, bias=False, group="stem"),
        Layer("layer_norm", 64, 64, stem * stem, name="bn1", group="stem"),
    ]
    in_ch = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3), strict=False)):
        stage_res = res // (2**stage)
        for b in range(blocks):
            g = f"layer{stage + 1}.{b}"
            stride = 2 if (b == 0 and stage > 0) else 1
            in_res = stage_res * stride
            out_px = stage_res * stage_res
            layers += [
                Layer("conv", in_ch, width, in_res * in_res, name=f"{g}.conv1", bias=False, group=g),
                Layer("layer_norm", width, width, in_res * in_res, name=f"{g}.bn1", group=g),
                Layer(
                    "conv", width, width, out_px, name=f"{g}.conv2", kernel_size=3, stride=stride, bias=False, group=g
                ),
                Layer("layer_norm", width, width, out_px, name=f"{g}.bn2", group=g),
                Layer("conv", width, 4 * width, out_px, name=f"{g}.conv3", bias=False, group=g),
                Layer("layer_norm", 4 * width, 4 * width, out_px, name=f"{g}.bn3", group=g),
            ]
            if b == 0:
                layers += [
                    Layer("conv", in_ch, 4 * width, out_px, name=f"{g}.downsample", stride=stride, bias=False, group=g),
                    Layer("layer_norm", 4 * width, 4 * width, out_px, name=f"{g}.downsample.bn", group=g),
                ]
            in_ch = 4 * width
    layers.append(Layer("dense", in_ch, classes, 1, name="fc", group="head"))
    return layers


# --- the registry -----------------------------------------------------------------------------------

_GPT3 = "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1"
_GPT2 = "Radford et al. 2019 / Hugging Face gpt2 configs (n_ctx 1024, vocab 50257)"
_BERT = "Devlin et al. 2019 (BERT); seq_len 128 is the phase-1 pre-training length"

# name -> (builder(seq_len), default seq_len or None, default batch, published params, source)
_ENTRIES: dict[str, tuple[Callable[[int], list[Layer]], int | None, int, float, str]] = {
    "fc_mnist": (lambda _t: fc_mnist(), None, 128, 648_010, "784-500-500-10 (002_90a437be98d90515.txt)"),
    "resnet50": (lambda _t: resnet50(), None, 256, 25_557_032, "He et al. 2016; torchvision resnet50"),
    "bert_base": (lambda t: bert(12, 768, 12, t), 128, 256, 110e6, _BERT),
    "bert_large": (lambda t: bert(24, 1024, 16, t), 128, 256, 340e6, _BERT),
    "gpt2_small": (lambda t: gpt(12, 768, 12, t), 1024, 512, 124e6, _GPT2),
    "gpt2_medium": (lambda t: gpt(24, 1024, 16, t), 1024, 512, 355e6, _GPT2),
    "gpt2_xl": (lambda t: gpt(48, 1600, 25, t), 1024, 512, 1.558e9, _GPT2),
    "gpt3_xl": (lambda t: gpt(24, 2048, 24, t, n_ctx=2048), 2048, 512, 1.3e9, _GPT3),
    "gpt3_6.7b": (lambda t: gpt(32, 4096, 32, t, n_ctx=2048), 2048, 1024, 6.7e9, _GPT3),
    "gpt3_13b": (lambda t: gpt(40, 5140, 40, t, n_ctx=2048), 2048, 1024, 13e9, _GPT3),
    "gpt3_175b": (lambda t: gpt(96, 12288, 96, t, n_ctx=2048), 2048, 1536, 175e9, _GPT3),
}
MAX_POSITIONS = {
    "bert_base": 512,
    "bert_large": 512,
    "gpt2_small": 1024,
    "gpt2_medium": 1024,
    "gpt2_xl": 1024,
    "gpt3_xl": 2048,
    "gpt3_6.7b": 2048,
    "gpt3_13b": 2048,
    "gpt3_175b": 2048,
}
ZOO_NAMES: tuple[str, ...] = tuple(_ENTRIES)
_ALIASES = {"gpt3_1.3b": "gpt3_xl", "gpt3_6b7": "gpt3_6.7b", "mnist": "fc_mnist", "resnet_50": "resnet50"}


def canonical_name(name: str) -> str:
    """Normalise spelling (``GPT-3 XL`` -> ``gpt3_xl``); unknown names list the known ones."""
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    key = key.replace("gpt_", "gpt")
    key = _ALIASES.get(key, key)
    if key not in _ENTRIES:
        raise UnknownNameError(f"unknown model {name!r}; known models: {', '.join(ZOO_NAMES)}")
    return key


def get_model(name: str, seq_len: int | None = None) -> ModelSpec:
    """Build a zoo model, optionally at another sequence length (sequence models only)."""
    key = canonical_name(name)
    build, default_seq, batch, published, source = _ENTRIES[key]
    if seq_len is not None:
        if default_seq is None:
            raise InvalidInputError(f"model {key} has no sequence length to set")
        if not isinstance(seq_len, int) or isinstance(seq_len, bool) or not 1 <= seq_len <= MAX_POSITIONS[key]:
            raise InvalidInputError(f"seq_len for {key} must be an integer in 1..{MAX_POSITIONS[key]}, got {seq_len!r}")
    t = seq_len if seq_len is not None else default_seq
    return ModelSpec(key, tuple(build(t or 1)), t, batch, published, source)  # t is None: no sequence
