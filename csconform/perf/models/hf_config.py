"""Model descriptions from Hugging Face style configs: a ``config.json``, or the same fields as YAML.

A config names its family in ``model_type`` and its shape in the usual fields (``n_layer`` or
``num_hidden_layers``, ``n_embd`` or ``hidden_size``, ...). :func:`model_from_config` reads the
architectural choices (:mod:`~csconform.perf.models.hf_families` says what each family reads) into
a :class:`~csconform.perf.models.transformer.Transformer` and returns a
:class:`~csconform.perf.models.model_spec.ModelSpec`, the list of
:class:`~csconform.perf.models.layer.Layer` records the performance model plans.

Encoder-decoder models (``t5``, ``bart``, ...) are refused with an :class:`UnsupportedModelError`
that says so: their encoder and decoder run over sequences of different lengths with
cross-attention between them, which this performance model does not describe.

Size fields are required (a real ``config.json`` has them); optional fields take Hugging Face's
defaults. Anything missing, contradictory, non-finite or out of range is a
:class:`~csconform.errors.ModelConfigError` whose one-line message names the file and the key; an
unknown ``model_type`` is an :class:`~csconform.errors.UnknownNameError` listing the known ones.
A file that cannot be read as a config is refused the same way (:mod:`~csconform.perf.models.config_file`).

An optional ``"csconform"`` object carries what the zoo knows beyond the architecture: the published
parameter count and its source, a default batch and sequence length, and aliases.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from csconform.errors import UnknownNameError, UnsupportedModelError
from csconform.perf.models.config_file import read_config
from csconform.perf.models.fields import MAX_SEQUENCE, Fields, shown
from csconform.perf.models.hf_families import FAMILIES, GPT2_LEGACY_POSITIONS, SEQUENCE_FAMILIES, SIZE_FIELDS
from csconform.perf.models.layer import total_params
from csconform.perf.models.model_spec import DEFAULT_BATCH, ModelSpec

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
}
LEGACY_MODEL_TYPES: dict[str, tuple[str, dict[str, Any]]] = {
    "RefinedWebModel": ("falcon", {}),
    "RefinedWeb": ("falcon", {"new_decoder_architecture": True}),
}
"""Falcon's former remote-code model types, read as falcon the way transformers reads them: the 7B
format (``RefinedWebModel``) is the original architecture, the 40B one (``RefinedWeb``) the new
decoder architecture (``n_head_kv`` key/value heads, two LayerNorms per block)."""


def load_model_config(path: str | Path, seq_len: int | None = None) -> ModelSpec:
    """Read ``path`` and build its model (named after the file unless the config names it)."""
    return model_from_config(read_config(path), seq_len=seq_len, name=Path(path).stem, source=str(path))


def model_from_config(
    config: Mapping[str, Any], seq_len: int | None = None, name: str | None = None, *, source: str | None = None
) -> ModelSpec:
    """Build the model a config describes, at ``seq_len`` (default: its own default, else its maximum).

    ``source`` (the file, when there is one) prefixes every error message."""
    f = Fields(config, source)
    family = config_type = config.get("model_type")
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
    if family in LEGACY_MODEL_TYPES:
        family, implied = LEGACY_MODEL_TYPES[family]
        config = {**implied, **config, "model_type": family}
        f = Fields(config, source)
        f.notes.append(
            f"model_type {shown(config_type)} is Falcon's former remote-code format, read as falcon as transformers "
            "reads it"
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
    sizes = SIZE_FIELDS[family]
    if not sizes.positions_limit:
        return None
    names = sizes.positions
    if family == "llama" and not f.present(names):
        names = ("max_sequence_length",)
    default = GPT2_LEGACY_POSITIONS if family == "gpt2" else sizes.positions_default
    return f.integer("maximum sequence length", names, default=default, limit=MAX_SEQUENCE)


def _rebuild(config: dict[str, Any], name: str, source: str | None, seq_len: int) -> ModelSpec:
    return model_from_config(config, seq_len=seq_len, name=name, source=source)
