"""YAML with the line of every key, for diagnostics that point into a user's file.

The document is composed with PyYAML's safe loader and its node marks are kept: the line of each
key and list item, the keys a mapping repeats (kept, the last value winning, as PyYAML does) and the
scalars written in quotes. Read the text with :func:`csconform.spec.yaml_io.read_text`, the reader
of the spec's own files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import SpecError

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A key path: mapping keys (as written) and list indices from the document's root.
KeyPath = tuple[str | int, ...]
MAX_DEPTH = 100  # far deeper than any config; keeps a hostile document from exhausting the stack


@dataclass(frozen=True)
class LocatedYAML:
    """A parsed document with the 1-based line of every key and list item, and its repeated keys."""

    data: Any
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    duplicates: tuple[tuple[KeyPath, int], ...] = ()
    quoted: frozenset[KeyPath] = frozenset()
    """Paths of the scalar values written in quotes (text by the author's choice)."""

    def line(self, path: KeyPath) -> int | None:
        """The line of ``path``, else of its nearest ancestor that has one."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return None


def _refuse(exc: Exception, path: Path | str) -> SpecError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "malformed document"
        return SpecError(f"{path}: {line}invalid YAML: {problem}")
    return SpecError(f"{path}: invalid YAML: {exc}")


def _walk(
    node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], duplicates: list, quoted: set[KeyPath], active: set[int]
) -> None:
    """Record the line of every key and list item under ``node`` (merge keys and aliases followed)."""
    if len(path) > MAX_DEPTH:
        raise SpecError(f"nested deeper than {MAX_DEPTH} levels")
    if id(node) in active:  # a recursive alias: its keys are already recorded higher up
        return
    if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"'):
        quoted.add(path)
    active.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for source in merged:
                    _walk(source, path, lines, duplicates, quoted, active)
                continue
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.id}>"
            if key in seen:
                duplicates.append(((*path, key), key_node.start_mark.line + 1))
            seen.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines, duplicates, quoted, active)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*path, index), item.start_mark.line + 1)
            _walk(item, (*path, index), lines, duplicates, quoted, active)
    active.discard(id(node))


def parse_yaml_located(text: str, path: Path | str) -> LocatedYAML:
    """Parse ``text`` (safe loading) keeping the line of every key; failures name file and line."""
    loader = _SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
        lines: dict[KeyPath, int] = {}
        duplicates: list[tuple[KeyPath, int]] = []
        quoted: set[KeyPath] = set()
        if node is not None:
            _walk(node, (), lines, duplicates, quoted, set())
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        raise _refuse(exc, path) from None
    finally:
        loader.dispose()
    return LocatedYAML(data, lines, tuple(duplicates), frozenset(quoted))
