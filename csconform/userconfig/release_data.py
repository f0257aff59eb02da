"""The per-release knowledge :mod:`.extract` read from each Model Zoo release, as the checks use it.

One :class:`ReleaseKnowledge` per release of ``specs/releases.yaml``, read from the shipped
``data/modelzoo-releases.json`` (regenerate it with ``python -m csconform.userconfig.extract CLONE``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from csconform.errors import InvalidInputError

CONVERT_SUBCOMMAND = "convert_legacy"
DATA_FILE = "modelzoo-releases.json"
"""The per-release data :mod:`.extract` writes, shipped in ``csconform/userconfig/data``."""


@dataclass(frozen=True)
class ModelConfigClass:
    """A model's config class in a release: its fields and what it does with any other key."""

    model: str
    class_name: str
    fields: frozenset[str]
    extra: str
    """pydantic's ``extra``: ``forbid`` refuses an unknown key, ``ignore`` and ``allow`` do not."""


@dataclass(frozen=True)
class ReleaseKnowledge:
    name: str
    commit: str
    scripts: Mapping[str, str]
    subcommands: tuple[str, ...]
    legacy_conversion: Mapping[str, Any] | None
    optimizer_aliases: Mapping[str, str]
    model_configs: Mapping[str, Any]
    param_group_keys: frozenset[str]
    """Optimizer-section keys the trainer reads to build param groups (``params``), not optimizer arguments."""
    optimizers_1x: Mapping[str, Any] | None
    families: Mapping[str, Mapping[str, list[str]]]
    optimizer_arguments_1x: Mapping[str, Mapping[str, Mapping[str, Any]]] | None
    """Per 1.x optimizer type: ``{key: {"argument": name, "default": value} or {..., "required": True}}``."""
    lr_schedulers_1x: Mapping[str, Any] | None
    """The 1.x LR schedulers: ``names`` (as written, lower case -> branch), ``arguments`` per branch, ``copies``."""
    refused_keys: Mapping[str, Mapping[str, Any]]
    """Keys refused on sight: ``{key: {"section": "model" or None, "file": path}}``."""
    zero_clipping_threshold: str | None
    """What a clipping threshold of 0 does: ``refused`` or ``no clipping``."""
    eval_frequency_fraction: bool
    """Whether ``eval_frequency`` may be a fraction of the run (the trainer's loop)."""
    convert_defaults: Mapping[str, Any]
    """What the convert command adds to the trainer section it writes (``init.device``)."""

    @property
    def reads_trainer_layout(self) -> bool:
        """Whether the release reads the trainer layout (it converts a flat-layout file to it on load)."""
        return self.legacy_conversion is not None

    @property
    def builds_1x_optimizers(self) -> bool:
        """Whether a flat file's optimizer and LR schedule are built by the 1.x ``PyTorchBaseModel`` (its
        optimizer types and messages), not from the vendor package's classes."""
        return self.optimizers_1x is not None

    @property
    def convert_command(self) -> str | None:
        """The command that converts a flat-layout file once (``cszoo config convert_legacy``), if any."""
        script = next(iter(self.scripts), None)
        return f"{script} config {CONVERT_SUBCOMMAND}" if script and CONVERT_SUBCOMMAND in self.subcommands else None

    def model_config(self, model: str) -> ModelConfigClass | None:
        """The config class of the model a section's ``name`` names, if the release has one."""
        entry = self.model_configs.get("models", {}).get(model)
        if entry is None:
            return None
        fields = frozenset(self.model_configs["field_sets"][entry["fields"]])
        return ModelConfigClass(model, entry["class"], fields, entry["extra"])

    @property
    def supported_optimizers(self) -> tuple[str, ...]:
        """The optimizer types a 1.x release builds (``SUPPORTED_OPTIMIZERS``); empty from 2.0."""
        return tuple(self.optimizers_1x["supported"]) if self.optimizers_1x else ()

    def optimizer_reads(self, optimizer_type: str) -> frozenset[str] | None:
        """The optimizer-section keys a 1.x release reads for ``optimizer_type`` (None: not a 1.x optimizer)."""
        if self.optimizers_1x is None:
            return None
        per_type = self.optimizers_1x["per_type"].get(optimizer_type.lower())
        if per_type is None:
            return None
        return frozenset(per_type) | frozenset(self.optimizers_1x["every_type"])

    def argument_name(self, argument: str, accepted: tuple[str, ...]) -> str:
        """The argument an optimizer section's key sets: itself, or the field it is an alias of."""
        alias = self.optimizer_aliases.get(argument)
        return alias if argument not in accepted and alias in accepted else argument


@functools.cache
def _stored() -> dict[str, Any]:
    text = (resources.files("csconform.userconfig") / "data" / DATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def knowledge(release: str) -> ReleaseKnowledge:
    """What release ``release`` (a full name, ``2.10.0``) does with a params file."""
    entries = {entry["name"]: entry for entry in _stored()["releases"]}
    if release not in entries:
        raise InvalidInputError(f"no extracted knowledge of release {release}; known: {', '.join(entries)}")
    entry = entries[release]
    return ReleaseKnowledge(
        name=entry["name"],
        commit=entry["commit"],
        scripts=entry["commands"]["scripts"],
        subcommands=tuple(entry["commands"]["subcommands"]),
        legacy_conversion=entry["legacy_conversion"],
        optimizer_aliases=entry["optimizer_aliases"],
        model_configs=entry["model_configs"],
        param_group_keys=frozenset(entry["param_group_keys"]),
        optimizers_1x=entry["optimizers_1x"],
        families=entry["families"],
        optimizer_arguments_1x=entry["optimizer_arguments_1x"],
        lr_schedulers_1x=entry["lr_schedulers_1x"],
        refused_keys=entry["refused_keys"],
        zero_clipping_threshold=entry["zero_clipping_threshold"],
        eval_frequency_fraction=entry["eval_frequency_fraction"],
        convert_defaults=entry["convert_defaults"],
    )


def release_names() -> list[str]:
    """The releases with extracted knowledge, oldest first."""
    return [entry["name"] for entry in _stored()["releases"]]


def first_release(fact: Callable[[ReleaseKnowledge], bool]) -> str | None:
    """The oldest release for which ``fact`` holds (how a message names where a behaviour starts)."""
    return next((name for name in release_names() if fact(knowledge(name))), None)
