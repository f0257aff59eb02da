"""What a name in a file stands for: ``cstorch.trace`` -> ``cerebras.pytorch.trace``.

The checks match the vendor's API by fully qualified name, whatever the file calls it: ``import
cerebras.pytorch as cstorch``, ``import cerebras_pytorch as cstorch`` (the 2.0 package name),
``from cerebras.pytorch.amp import GradScaler``, ``from torch import nn``, ``import tensorflow as
tf``. Relative imports are made absolute from the file's module name, so that a helper imported from
another file of the same run is found (:mod:`csconform.usercode.project`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

PACKAGE_ALIASES = {"cerebras_pytorch": "cerebras.pytorch"}
"""Older spellings of a package, mapped to the one the checks know."""


def _canonical(name: str) -> str:
    head, dot, rest = name.partition(".")
    return PACKAGE_ALIASES.get(head, head) + dot + rest


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


@dataclass
class ImportTable:
    """The names a module binds by importing, each to the qualified name it stands for."""

    module: str
    """The module's own dotted name (``pkg.sub.mod``), for relative imports."""
    is_package: bool = False
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, statements: list[ast.Import | ast.ImportFrom], module: str, is_package: bool = False) -> ImportTable:
        """The names bound by ``statements`` (every import of a module, wherever it is written)."""
        table = cls(module, is_package)
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        table.names[alias.asname] = _canonical(alias.name)
                    else:  # `import a.b.c` binds `a`
                        head = alias.name.partition(".")[0]
                        table.names[head] = _canonical(head)
            else:
                base = table._absolute(node.module, node.level)
                for alias in node.names:
                    if alias.name != "*":
                        table.names[alias.asname or alias.name] = _canonical(
                            f"{base}.{alias.name}" if base else alias.name
                        )
        return table

    def _absolute(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
        if level > 1:
            package = package[: len(package) - (level - 1)]
        return ".".join([*package, *([module] if module else [])])

    def qualified(self, node: ast.expr) -> str | None:
        """The qualified name an expression stands for (``nn.Linear`` -> ``torch.nn.Linear``), or
        None when it is not a name or a chain of attributes on one. A name that is not imported
        stands for itself (a builtin, or a name of this module)."""
        name = dotted(node)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        if head in self.names:
            return self.names[head] + dot + rest
        return name


def last(name: str | None) -> str:
    """The last component of a qualified name (``torch.nn.Linear`` -> ``Linear``)."""
    return (name or "").rpartition(".")[2]
