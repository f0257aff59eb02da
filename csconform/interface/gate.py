"""What a check sees as ``engine``: the implementation, gated by its declaration.

Every attribute a check reaches is looked up in the capability table: reaching a capability the
implementation did not declare raises :class:`~csconform.errors.Unsupported` (the check is reported
``unsupported``, not failed and not passed), and so does asking for an undeclared target. The gate
also notes which capabilities each check touched, so the matrix can mark checks that ran through an
emulated backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from csconform.errors import Unsupported
from csconform.interface.capabilities import CAPABILITIES, TARGETS, capability_of_path
from csconform.interface.validate import Declaration

_DECLARED_PATHS = tuple(path for capability in CAPABILITIES for path in capability.modules)


class _Gate:
    """Shared bookkeeping of one implementation under test."""

    def __init__(self, module: ModuleType, declaration: Declaration, name: str) -> None:
        self.module = module
        self.declaration = declaration
        self.name = name
        self.touched: set[str] = set()

    def require(self, capability: str) -> None:
        if capability not in self.declaration.capabilities:
            raise Unsupported(f"{self.name} does not offer the capability {capability!r}")
        self.touched.add(capability)

    def require_target(self, target: str) -> None:
        """Refuse a known target the implementation does not run (unknown names are its to refuse)."""
        if target in TARGETS and target not in self.declaration.targets:
            raise Unsupported(
                f"{self.name} does not run on target {target!r} (it runs {', '.join(self.declaration.targets)})"
            )


class _GatedNamespace:
    """A submodule that holds deeper capability paths (``optim`` holds ``optim.lr_scheduler``)."""

    def __init__(self, gate: _Gate, value: Any, path: str) -> None:
        self._gate = gate
        self._value = value
        self._path = path

    def __getattr__(self, name: str) -> Any:
        return _reach(self._gate, self._value, f"{self._path}.{name}", name)

    def __repr__(self) -> str:
        return f"<{self._gate.name}.{self._path} (gated)>"


def _reach(gate: _Gate, owner: Any, path: str, name: str) -> Any:
    capability = capability_of_path(path)
    holds_deeper = any(declared.startswith(path + ".") for declared in _DECLARED_PATHS)
    if capability is not None and not holds_deeper:
        gate.require(capability)
    value = getattr(owner, name)
    if holds_deeper:
        return _GatedNamespace(gate, value, path)
    return value


class ImplementationUnderTest:
    """The ``engine`` fixture's value: attribute access goes through the capability gate."""

    def __init__(self, module: ModuleType, declaration: Declaration, name: str) -> None:
        self._gate = _Gate(module, declaration, name)

    @property
    def declaration(self) -> Declaration:
        return self._gate.declaration

    @property
    def module(self) -> ModuleType:
        return self._gate.module

    def take_touched(self) -> set[str]:
        """The capabilities touched since the last call (one check's worth)."""
        touched, self._gate.touched = self._gate.touched, set()
        return touched

    def __getattr__(self, name: str) -> Any:
        return _reach(self._gate, self._gate.module, name, name)

    # -- targets ---------------------------------------------------------------------------------

    def reset(self) -> None:
        self._gate.module.reset()
        self._gate.module.set_target(self._gate.declaration.default_target)

    def set_target(self, name: str) -> None:
        self._gate.require_target(name)
        self._gate.module.set_target(name)

    @contextmanager
    def use_target(self, name: str) -> Iterator[str]:
        self._gate.require_target(name)
        with self._gate.module.use_target(name) as target:
            yield target

    def current_target(self) -> str:
        return str(self._gate.module.current_target())

    def __repr__(self) -> str:
        return f"<implementation under test {self._gate.name}>"
