"""What the vendor's package accepts: its optimizer and LR scheduler classes and their arguments.

From release 2.0 the Model Zoo builds the optimizer and the schedulers of a params file from the
classes of ``cerebras.pytorch.optim`` by name (case-insensitive, every subclass of ``Optimizer`` /
``LRScheduler``), passing the section's keys as constructor arguments. So the names and the
arguments a config may use are those classes' signatures. ``data/cerebras-pytorch-2.10.0.json``
records them, read from the installed package by :func:`introspect` (run
``python -m csconform.userconfig.package_api OUT`` where cerebras-pytorch 2.10.0 is installed;
``tests/unit/validate`` checks the file against the package there).
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any

PACKAGE = "cerebras-pytorch"
PACKAGE_VERSION = "2.10.0"
DATA_FILE = f"{PACKAGE}-{PACKAGE_VERSION}.json"
# Constructor arguments the Model Zoo fills in itself; a params file never gives them.
SUPPLIED_BY_THE_ZOO = ("self", "params", "optimizer")


@dataclass(frozen=True)
class Signature:
    """A class's constructor arguments: all of them, and those without a default."""

    name: str
    arguments: tuple[str, ...]
    required: tuple[str, ...]


@dataclass(frozen=True)
class PackageAPI:
    optimizers: dict[str, Signature]
    lr_schedulers: dict[str, Signature]
    weight_decay_schedulers: tuple[str, ...]

    def optimizer(self, name: str) -> Signature | None:
        """The optimizer class called ``name``, matched without regard to case (as the zoo does)."""
        return _by_lower(self.optimizers, name)

    def lr_scheduler(self, name: str) -> Signature | None:
        return _by_lower(self.lr_schedulers, name)

    def is_weight_decay_scheduler(self, name: str) -> bool:
        return str(name).lower() in {n.lower() for n in self.weight_decay_schedulers}


def _by_lower(table: dict[str, Signature], name: str) -> Signature | None:
    wanted = str(name).lower()
    return next((sig for key, sig in table.items() if key.lower() == wanted), None)


def _signatures(entries: dict[str, Any]) -> dict[str, Signature]:
    return {
        name: Signature(name, tuple(entry["arguments"]), tuple(entry["required"])) for name, entry in entries.items()
    }


@functools.cache
def package_api() -> PackageAPI:
    """The recorded API of cerebras-pytorch 2.10.0 (shipped with csconform)."""
    text = (resources.files("csconform.userconfig") / "data" / DATA_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    return PackageAPI(
        _signatures(data["optimizers"]),
        _signatures(data["lr_schedulers"]),
        tuple(data["weight_decay_schedulers"]),
    )


# --- reading the installed package ------------------------------------------------------------------


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _signature(cls: type) -> dict[str, list[str]]:
    arguments, required = [], []
    for name, parameter in inspect.signature(cls.__init__).parameters.items():  # type: ignore[misc]
        if name in SUPPLIED_BY_THE_ZOO or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        arguments.append(name)
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    return {"arguments": arguments, "required": required}


def introspect() -> dict[str, Any]:
    """The record of the installed ``cerebras.pytorch`` (the same shape as the shipped file)."""
    import importlib.metadata

    import cerebras.pytorch as cstorch  # only where the vendor's package is installed

    def table(base: type) -> dict[str, dict[str, list[str]]]:
        return {cls.__name__: _signature(cls) for cls in sorted(_subclasses(base), key=lambda c: c.__name__)}

    return {
        "package": PACKAGE,
        "version": importlib.metadata.version(PACKAGE),
        "note": "constructor arguments of every subclass of cerebras.pytorch.optim.Optimizer and of "
        "cerebras.pytorch.optim.lr_scheduler.LRScheduler, read with inspect.signature; 'required' have no default",
        "optimizers": table(cstorch.optim.Optimizer),
        "lr_schedulers": table(cstorch.optim.lr_scheduler.LRScheduler),
        "weight_decay_schedulers": sorted(
            cls.__name__ for cls in _subclasses(cstorch.optim.weight_decay_scheduler.WeightDecayScheduler)
        ),
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m csconform.userconfig.package_api OUT.json")
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(introspect(), out, indent=1, sort_keys=True)
        out.write("\n")
