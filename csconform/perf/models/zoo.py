"""The model zoo: published models as config files in ``csconform/perf/configs/`` (data, not code).

Each file is a Hugging Face style config read by :mod:`csconform.perf.models.hf_config`; its
``"csconform"`` object adds the published parameter count and its source (the unit tests check our
layer lists against it), a default batch and sequence length, and aliases. The files ship inside
the package, so an installed wheel has them.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

from csconform.errors import InvalidInputError, UnknownNameError
from csconform.perf.models.hf_config import model_from_config
from csconform.perf.models.model_spec import ModelSpec

__all__ = ["ZOO_NAMES", "canonical_name", "get_model", "zoo_config"]


@functools.cache
def _configs() -> dict[str, dict[str, Any]]:
    """Every zoo config by name, smallest published model first."""
    folder = resources.files("csconform.perf") / "configs"
    configs = {
        entry.name.removesuffix(".json"): json.loads(entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    }
    return dict(sorted(configs.items(), key=lambda item: (item[1]["csconform"]["published_params"], item[0])))


@functools.cache
def _aliases() -> dict[str, str]:
    return {alias: name for name, config in _configs().items() for alias in config["csconform"].get("aliases", [])}


ZOO_NAMES: tuple[str, ...] = tuple(_configs())


def canonical_name(name: str) -> str:
    """Normalise spelling (``GPT-3 XL`` -> ``gpt3_xl``); unknown names list the known ones."""
    key = str(name).strip().lower().replace("-", "_").replace(" ", "_")
    key = re.sub(r"gpt_(\d)", r"gpt\1", key)
    key = _aliases().get(key, key)
    if key not in _configs():
        raise UnknownNameError(f"unknown model {name!r}; known models: {', '.join(ZOO_NAMES)}")
    return key


def zoo_config(name: str) -> dict[str, Any]:
    """A copy of the config file of zoo model ``name``."""
    return json.loads(json.dumps(_configs()[canonical_name(name)]))


def get_model(name: str, seq_len: int | None = None) -> ModelSpec:
    """Build a zoo model, optionally at another sequence length (sequence models only)."""
    key = canonical_name(name)
    config = _configs()[key]
    if seq_len is not None and config["model_type"] in ("mlp", "resnet"):
        raise InvalidInputError(f"model {key} has no sequence length to set")
    return model_from_config(config, seq_len=seq_len, name=key)
