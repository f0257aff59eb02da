"""A user's config file as read: the data, and where each key is (dotted path and line).

The text is read by the spec's own reader (:func:`csconform.spec.yaml_io.read_text`); YAML is
composed with PyYAML's safe loader keeping node marks (:mod:`csconform.spec.yaml_located`); a
``config.json`` is parsed by :mod:`json`, and the lines of its keys come from composing the same text
as YAML (JSON is YAML's flow style) when PyYAML accepts it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.errors import CsConformError, InvalidInputError
from csconform.spec.yaml_io import read_text
from csconform.spec.yaml_located import KeyPath, LocatedYAML, parse_yaml_located
from csconform.userconfig.description import KeyUse, Origin, Setting

# A float in exponent form without a decimal point (1e-5): YAML 1.2 reads a number, but PyYAML's
# YAML 1.1 resolver, which the Model Zoo loads params files with, reads the string "1e-5".
TEXT_FLOAT = re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$")


def as_number(value: Any) -> Any:
    """A YAML 1.1 text float (``"1e-5"``) as the number it means; any other value unchanged."""
    return float(value) if isinstance(value, str) and TEXT_FLOAT.match(value) else value


class UnreadableConfigError(InvalidInputError):
    """The file cannot be read as a config: missing, not UTF-8, not YAML/JSON, or not a mapping."""


def dotted(path: KeyPath) -> str:
    """A key path as text: list indices in brackets, keys with a dot in quotes
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
class Document:
    """The parsed file with the line of every key."""

    path: Path
    located: LocatedYAML

    @property
    def data(self) -> Any:
        return self.located.data

    def node(self, path: KeyPath) -> Any:
        """The value at ``path``, or None when any step is missing."""
        value = self.data
        for part in path:
            if isinstance(part, int):
                if not isinstance(value, list) or not -len(value) <= part < len(value):
                    return None
                value = value[part]
            else:
                if not isinstance(value, Mapping) or part not in value:
                    return None
                value = value[part]
        return value

    def has(self, path: KeyPath) -> bool:
        parent = self.node(path[:-1])
        key = path[-1]
        if isinstance(key, int):
            return isinstance(parent, list) and -len(parent) <= key < len(parent)
        return isinstance(parent, Mapping) and key in parent

    def origin(self, path: KeyPath) -> Origin:
        return Origin(dotted(path), self.located.line(path))

    def setting(self, path: KeyPath) -> Setting[Any] | None:
        """The value at ``path`` with its origin, or None when the key is absent or null."""
        value = self.node(path)
        return None if value is None else Setting(as_number(value), self.origin(path))

    def section(self, path: KeyPath) -> Mapping[str, Any] | None:
        value = self.node(path)
        return value if isinstance(value, Mapping) else None

    def key_uses(self, section_depth: int) -> tuple[KeyUse, ...]:
        """Every key in the file; its section is the path's first ``section_depth`` keys."""
        uses = []
        for path, line in self.located.lines.items():
            if isinstance(path[-1], str):
                names = [p for p in path if isinstance(p, str)]
                section = ".".join(names[:section_depth])
                uses.append(KeyUse(dotted(path), line, section, path[-1]))
        return tuple(uses)

    def duplicate_keys(self) -> tuple[KeyUse, ...]:
        return tuple(KeyUse(dotted(path), line, "", str(path[-1])) for path, line in self.located.duplicates)

    def items(self, path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
        """``(path, value)`` of every entry of the mapping or list at ``path``."""
        value = self.node(path)
        if isinstance(value, Mapping):
            yield from (((*path, key), as_number(item)) for key, item in value.items())
        elif isinstance(value, list):
            yield from (((*path, index), as_number(item)) for index, item in enumerate(value))

    def text_numbers(self) -> tuple[KeyUse, ...]:
        """Every value that YAML 1.1 reads as text although it is written as a number (``1e-5``)."""
        found = []
        for path, line in self.located.lines.items():
            value = self.node(path)
            if isinstance(value, str) and TEXT_FLOAT.match(value) and path not in self.located.quoted:
                found.append(KeyUse(dotted(path), line, "", value))
        return tuple(found)


def read_document(path: Path | str) -> Document:
    """Read a YAML params file or a JSON config; anything unreadable is an :class:`UnreadableConfigError`."""
    path = Path(path)
    try:
        text = read_text(path)
        reader = _located_json if path.suffix.lower() == ".json" else parse_yaml_located
        located = reader(text, path)
    except UnreadableConfigError:
        raise
    except CsConformError as exc:
        raise UnreadableConfigError(str(exc)) from None
    if not isinstance(located.data, Mapping):
        kind = "an empty file" if located.data is None else f"a {type(located.data).__name__}"
        raise UnreadableConfigError(f"{path}: a config must be a mapping of sections, got {kind}")
    return Document(path, located)


def _located_json(text: str, path: Path) -> LocatedYAML:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableConfigError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise UnreadableConfigError(f"{path}: invalid JSON: nested too deeply") from None
    try:
        lines = parse_yaml_located(text, path)
    except CsConformError:  # JSON that PyYAML's YAML 1.1 does not take: values without lines
        return LocatedYAML(data)
    return LocatedYAML(data, lines.lines, lines.duplicates, lines.quoted)
