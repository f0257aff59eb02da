"""A parsed YAML or JSON document that remembers where each of its keys was written.

Diagnostics point into the user's file, so the reader keeps, beside the data, the 1-based line of
every key and list item (by its key path from the root), the keys a mapping gives twice, and which
scalars were written in quotes (text by the author's choice, where YAML 1.1 would otherwise read
``1e-5`` as text by accident).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

KeyPath = tuple[str | int, ...]
"""Mapping keys (as written) and list indices from the document's root."""


def dotted(path: KeyPath) -> str:
    """A key path as text: list indices in brackets, keys holding a dot in quotes
    (``trainer.init.callbacks[4].ScopedTrainFlags."csx.performance.micro_batch_size"``)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = f'"{part}"' if "." in part else part
            text += f".{name}" if text else name
    return text


@dataclass(frozen=True)
class RepeatedKey:
    """A key given twice in one mapping: where the repeat is and where the first one was (None: a
    JSON text the YAML composer could not read, whose lines are unknown)."""

    path: KeyPath
    line: int | None
    first_line: int | None


@dataclass(frozen=True)
class Document:
    """The data of one file with the line of every key (lines are empty where none are known)."""

    source: str
    data: Any
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    repeated_keys: tuple[RepeatedKey, ...] = ()
    quoted: frozenset[KeyPath] = frozenset()

    def line(self, path: KeyPath) -> int | None:
        """The line of ``path``, else of its nearest ancestor that has one."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return None

    def node(self, path: KeyPath) -> Any:
        """The value at ``path``, or None when any step is missing."""
        value = self.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(value, list) or not -len(value) <= part < len(value):
                    return None
            elif not isinstance(value, Mapping) or part not in value:
                return None
            value = value[part]
        return value

    def has(self, path: KeyPath) -> bool:
        """Whether ``path`` is present (with any value, null included)."""
        parent = self.node(path[:-1])
        key = path[-1]
        if isinstance(key, int):
            return isinstance(parent, list) and -len(parent) <= key < len(parent)
        return isinstance(parent, Mapping) and key in parent

    def items(self, path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
        """``(path, value)`` of every entry of the mapping or list at ``path``."""
        value = self.node(path)
        if isinstance(value, Mapping):
            yield from (((*path, key), item) for key, item in value.items())
        elif isinstance(value, list):
            yield from (((*path, index), item) for index, item in enumerate(value))
