"""LR scheduler sections of a params file, read into :class:`SchedulerConfig` trees.

Two spellings exist. The flat layout gives ``optimizer.learning_rate`` as a number, one mapping with
a ``scheduler:`` key, or a list of them run one after another (1.x names such as ``Linear`` or
``CosineDecay``, ``steps``/``decay_steps`` for the length). The trainer layout gives
``trainer.init.schedulers``, a list of one-key mappings ``{ClassName: {arguments}}`` whose
``SequentialLR`` nests its phases. Both become the vendor's class names and argument names (the 1.x
spellings translated the way the 1.x Model Zoo reads them, ``PyTorchBaseModel._configure_lr_scheduler``
in 1.9.1); what is wrong with them is for :mod:`.checks` to say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from csconform.documents import KeyPath
from csconform.userconfig.config_file import ConfigFile
from csconform.userconfig.description import SchedulerConfig, Setting
from csconform.userconfig.package_api import package_api

# 1.x argument spellings -> the package's; None: a key the reader consumes itself.
FLAT_ARGUMENT_NAMES: dict[str, str | None] = {
    "steps": "total_iters",
    "decay_steps": "total_iters",
    "values": "learning_rates",
    "boundaries": "milestones",
    "t_max": "T_max",
    "t_0": "T_0",
    "t_mult": "T_mult",
    "scheduler": None,
    "main_scheduler": None,
}
# Schedulers whose first rate is called learning_rate / base_lr rather than initial_learning_rate.
OWN_RATE_NAME = {"ConstantLR": "learning_rate", "CyclicLR": "base_lr"}
SEQUENTIAL = "SequentialLR"
CHAINED = ("ChainedScheduler", "ChainedLR")


def class_name(written: object) -> str | None:
    """The package's LR scheduler class a name means (``cosinedecay`` -> ``CosineDecayLR``), if any."""
    if not isinstance(written, str):
        return None
    api = package_api()
    for candidate in (written, f"{written}lr"):
        signature = api.lr_scheduler(candidate)
        if signature is not None:
            return signature.name
    return None


def _flat_arguments(doc: ConfigFile, path: KeyPath, name: str | None) -> dict[str, Setting[Any]]:
    """A 1.x scheduler mapping's arguments under the package's names."""
    arguments: dict[str, Setting[Any]] = {}
    for key_path, value in doc.entries(path):
        key = str(key_path[-1])
        renamed = FLAT_ARGUMENT_NAMES.get(key, key)
        if renamed is None:
            continue
        if key in ("learning_rate", "base_lr") and name not in OWN_RATE_NAME:
            renamed = "initial_learning_rate"
        if key == "gamma" and name in ("ExponentialLR", "InverseExponentialTimeDecayLR"):
            renamed = "decay_rate"
        if key == "decay_rate" and name in ("StepLR", "MultiStepLR"):
            renamed = "gamma"
        if value is not None:
            arguments.setdefault(renamed, Setting(value, doc.origin(key_path)))
    if name in OWN_RATE_NAME and OWN_RATE_NAME[name] not in arguments and "initial_learning_rate" in arguments:
        arguments[OWN_RATE_NAME[name]] = arguments.pop("initial_learning_rate")
    return arguments


def _flat_one(doc: ConfigFile, path: KeyPath) -> SchedulerConfig:
    written = doc.node((*path, "scheduler"))
    name = class_name(written)
    origin = doc.origin((*path, "scheduler")) if doc.has((*path, "scheduler")) else doc.origin(path)
    return SchedulerConfig(
        name=Setting(name or str(written), origin),
        written=str(written),
        arguments=_flat_arguments(doc, path, name),
        origin=doc.origin(path),
    )


def read_flat_schedule(doc: ConfigFile, path: KeyPath) -> SchedulerConfig | None:
    """``optimizer.learning_rate`` of a flat-layout file (``path`` points at it)."""
    value = doc.node(path)
    origin = doc.origin(path)
    if value is None:
        return None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        rate: Any = value
        if isinstance(value, str):  # 1.x YAML reads 1e-5 as a string; the zoo converts it with float()
            try:
                rate = float(value)
            except ValueError:
                rate = value
        return SchedulerConfig(
            Setting("ConstantLR", origin), str(value), {"learning_rate": Setting(rate, origin)}, origin=origin
        )
    if isinstance(value, Mapping):
        return _flat_one(doc, path)
    if isinstance(value, list) and value:
        phases = tuple(_flat_one(doc, (*path, i)) for i in range(len(value)) if isinstance(value[i], Mapping))
        if len(phases) == 1 and len(value) == 1:
            return phases[0]
        mains = {
            str(p.get("main_scheduler")).lower() for p in value if isinstance(p, Mapping) and "main_scheduler" in p
        }
        name = "ChainedScheduler" if mains & {"chained", "chainedlr"} else SEQUENTIAL
        return SchedulerConfig(Setting(name, origin), "(list)", {}, phases, origin)
    return SchedulerConfig(Setting(str(value), origin), str(value), {}, origin=origin)


def read_trainer_scheduler(doc: ConfigFile, path: KeyPath) -> SchedulerConfig:
    """One ``{ClassName: {arguments}}`` entry of the trainer layout (``path`` points at the mapping)."""
    entry = doc.node(path)
    if not isinstance(entry, Mapping) or len(entry) != 1:
        return SchedulerConfig(Setting(repr(entry), doc.origin(path)), repr(entry), {}, origin=doc.origin(path))
    written = str(next(iter(entry)))
    body_path = (*path, written)
    name = class_name(written) if package_api().lr_scheduler(written) else None
    arguments: dict[str, Setting[Any]] = {}
    children: tuple[SchedulerConfig, ...] = ()
    for key_path, value in doc.entries(body_path):
        key = str(key_path[-1])
        if key == "schedulers" and isinstance(value, list):
            children = tuple(read_trainer_scheduler(doc, child) for child, _ in doc.entries(key_path))
        elif key == "scheduler" and isinstance(value, Mapping):  # ScalePerParamLR wraps one scheduler
            children = (read_trainer_scheduler(doc, key_path),)
        elif value is not None:
            arguments[key] = Setting(value, doc.origin(key_path))
    return SchedulerConfig(
        Setting(name or written, doc.origin(body_path)), written, arguments, children, doc.origin(path)
    )
