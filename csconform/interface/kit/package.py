"""The implementation module itself: the target it runs checks on, and its submodules imported on first use.

Every implementation offers ``set_target``, ``use_target`` and ``current_target``
(:class:`~csconform.interface.core.ImplementationModule`) over the targets it declares, and imports
its capability submodules only when a check first reaches them, so that importing it stays cheap and
a capability whose dependencies are missing fails only where it is used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from types import ModuleType

from csconform.errors import InvalidInputError


class TargetSwitch:
    """The target an implementation currently runs on, one of ``targets``; ``implementation`` names
    it in the refusal of a target it does not run."""

    def __init__(self, targets: tuple[str, ...], default: str, implementation: str) -> None:
        self.targets = targets
        self.default = default
        self.implementation = implementation
        self.target = default

    def current(self) -> str:
        return self.target

    def set(self, name: str) -> None:
        if name not in self.targets:
            raise InvalidInputError(
                f"unknown or unavailable target {name!r}; {self.implementation} runs: {', '.join(self.targets)}"
            )
        self.target = name

    @contextmanager
    def use(self, name: str) -> Iterator[str]:
        """Run a block on another target and restore the previous one afterwards."""
        previous = self.target
        self.set(name)
        try:
            yield name
        finally:
            self.target = previous

    def reset(self) -> None:
        self.target = self.default


def submodules_on_first_use(package: str, names: Collection[str]) -> Callable[[str], ModuleType]:
    """The module ``__getattr__`` of ``package`` that imports its submodule ``names`` when first read."""

    def __getattr__(name: str) -> ModuleType:
        if name in names:
            module = importlib.import_module(f"{package}.{name}")
            setattr(sys.modules[package], name, module)
            return module
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
