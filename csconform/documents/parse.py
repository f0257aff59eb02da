"""YAML and JSON text into a :class:`~csconform.documents.document.Document`, checked, with its lines.

Every structured file csconform reads is parsed here, under one set of rules:

- ``.yaml``/``.yml`` files are YAML (PyYAML's safe loader: no arbitrary objects), ``.toml`` files
  TOML (``tomllib``; a ``pyproject.toml``), anything else is JSON (the json module: a
  ``config.json`` reads ``1e-05`` as a number, which YAML 1.1 would not);
- a document nested deeper than :data:`MAX_DEPTH` containers, holding a non-finite number (NaN, an
  infinity, a literal too large for a float), or expanding through YAML aliases into more values
  than it has characters ("billion laughs") is refused;
- a key given twice in one mapping is refused, naming both lines, unless the reader keeps the last
  value as PyYAML and the json module do (``repeated_keys="keep-last"``: a params file the vendor
  shipped may repeat a key, and the caller reports it) — the repeat is recorded either way;
- the top level is a mapping unless the reader asks for any value.

Lines come from PyYAML's node marks. JSON is composed by the same YAML composer for its marks
(JSON is YAML's flow style); the rare JSON text PyYAML cannot compose keeps its data without lines,
and so does TOML (tomllib keeps none; it refuses a repeated key itself).
Every refusal is an :class:`~csconform.errors.UnreadableDocumentError`.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from csconform.documents.document import Document, KeyPath, RepeatedKey, dotted
from csconform.documents.files import MAX_TEXT_BYTES, read_text
from csconform.errors import UnreadableDocumentError

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists accepted (the top level counts as the first)."""
ALIAS_EXPANSION = 10
"""How many values per character of text a document may stand for through YAML aliases (and merge
keys): a document without aliases has fewer values than characters, a shared block of defaults
a few times more, a "billion laughs" exponentially more. Bounds the work every reader does."""
RepeatedKeys = Literal["refuse", "keep-last"]
TopLevel = Literal["mapping", "any"]

# libyaml's safe loader when PyYAML was built with it: the same documents, ten times faster (every
# pytest run loads the whole spec).
_SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


Format = Literal["yaml", "json", "toml"]


def format_of(path: str | os.PathLike[str]) -> Format:
    """``yaml`` for ``.yaml``/``.yml`` files, ``toml`` for ``.toml``, ``json`` for anything else."""
    suffix = Path(path).suffix.lower()
    return "yaml" if suffix in (".yaml", ".yml") else "toml" if suffix == ".toml" else "json"


def read_document(
    path: str | os.PathLike[str],
    *,
    what: str = "document",
    repeated_keys: RepeatedKeys = "refuse",
    top: TopLevel = "mapping",
    max_bytes: int = MAX_TEXT_BYTES,
) -> Document:
    """The document in the file ``path`` (YAML or JSON by its suffix), checked; see the module docstring."""
    text = read_text(path, max_bytes, what)
    return parse_document(text, str(path), format_of(path), what=what, repeated_keys=repeated_keys, top=top)


def parse_document(
    text: str,
    source: str,
    format: Format = "yaml",
    *,
    what: str = "document",
    repeated_keys: RepeatedKeys = "refuse",
    top: TopLevel = "mapping",
) -> Document:
    """``text`` (named ``source`` in messages) parsed as ``format``, checked; see the module docstring."""
    max_values = ALIAS_EXPANSION * len(text) + 10_000
    if format == "yaml":
        data, located = _load_yaml(text, source, max_values)
    elif format == "toml":
        data, located = _load_toml(text, source), _Located()
    else:
        data, repeated_names = _load_json(text, source)
        try:
            _, located = _load_yaml(text, source, max_values, construct=False)  # JSON is YAML's flow style
        except UnreadableDocumentError:  # valid JSON that PyYAML cannot compose: data without lines
            located = _Located(repeated=[RepeatedKey((name,), None, None) for name in repeated_names])
    check_data(data, source, max_values)
    document = Document(source, data, located.lines, tuple(located.repeated), frozenset(located.quoted))
    if repeated_keys == "refuse" and document.repeated_keys:
        first = document.repeated_keys[0]
        where = "" if first.first_line is None else f" (first on line {first.first_line})"
        raise UnreadableDocumentError(
            f"key {dotted(first.path)} is given twice in one mapping{where}",
            source=source,
            line=first.line,
            key=dotted(first.path),
        )
    if top == "mapping" and not isinstance(data, dict):
        raise UnreadableDocumentError(f"expected a {what} (a mapping of keys), got {_kind(data)}", source=source)
    return document


def check_data(data: Any, source: str, max_values: int | None = None) -> None:
    """Refuse ``data`` nested deeper than :data:`MAX_DEPTH` or holding a non-finite number.

    ``max_values`` bounds the values visited, counting a value reached through several YAML aliases
    each time (see :data:`ALIAS_EXPANSION`). A value that contains itself is nested without end, so
    the depth bound refuses it. Also used for data built in memory (a checkpoint's manifest)."""
    stack: list[tuple[KeyPath, Any, int]] = [((), data, 1)]
    visited = 0
    while stack:
        path, value, depth = stack.pop()
        visited += 1
        if max_values is not None and visited > max_values:
            raise _too_many_values(source, max_values)
        if isinstance(value, dict | list | tuple):
            if depth > MAX_DEPTH:
                raise UnreadableDocumentError(
                    f"{_where(path[:8])}...: nested deeper than {MAX_DEPTH} levels", source=source, key=dotted(path)
                )
            children = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend(((*path, key), item, depth + 1) for key, item in children)
        elif isinstance(value, float) and not math.isfinite(value):
            raise UnreadableDocumentError(
                f"{_where(path)}: {value} is not a finite number", source=source, key=dotted(path)
            )


def _load_yaml(text: str, source: str, max_values: int, construct: bool = True) -> tuple[Any, _Located]:
    """The data of ``text`` (safe loading: plain values, lists and mappings) and where its keys are."""
    loader = _SAFE_LOADER(text)
    try:
        with _yaml_errors(source):
            node = loader.get_single_node()
            located = _locate(node, source, max_values)  # before construction, which flattens merge keys
            data = loader.construct_document(node) if construct and node is not None else None
    finally:
        loader.dispose()
    return data, located


@contextmanager
def _yaml_errors(source: str) -> Iterator[None]:
    """PyYAML's refusals as one line naming the file and the line."""
    try:
        yield
    except UnreadableDocumentError:  # the walk's own refusals (it is a ValueError too)
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed document"
        line = mark.line + 1 if mark is not None else None
        raise UnreadableDocumentError(f"invalid YAML: {problem}", source=source, line=line) from None
    except RecursionError:
        raise UnreadableDocumentError(f"invalid YAML: nested deeper than {MAX_DEPTH} levels", source=source) from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        # PyYAML raises plain ValueError/TypeError for some malformed scalars and tags, and Python
        # refuses integers of more than 4,300 digits.
        raise UnreadableDocumentError(f"invalid YAML: {str(exc).splitlines()[0]}", source=source) from None


def _load_toml(text: str, source: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UnreadableDocumentError(f"invalid TOML: {exc}", source=source) from None
    except RecursionError:
        raise UnreadableDocumentError(f"invalid TOML: nested deeper than {MAX_DEPTH} levels", source=source) from None


def _load_json(text: str, source: str) -> tuple[Any, list[str]]:
    """The data, and the keys some object gives twice (the json module keeps the last silently)."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping: dict[str, Any] = {}
        for key, value in items:
            if key in mapping:
                repeated.append(key)
            mapping[key] = value
        return mapping

    try:
        return json.loads(text, object_pairs_hook=pairs), repeated
    except json.JSONDecodeError as exc:
        raise UnreadableDocumentError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", source=source, line=exc.lineno
        ) from None
    except RecursionError:
        raise UnreadableDocumentError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels", source=source) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise UnreadableDocumentError(f"invalid JSON: {str(exc).split(';')[0]}", source=source) from None


@dataclass
class _Located:
    lines: dict[KeyPath, int] = field(default_factory=dict)
    repeated: list[RepeatedKey] = field(default_factory=list)
    quoted: set[KeyPath] = field(default_factory=set)


def _locate(node: yaml.Node | None, source: str, max_values: int) -> _Located:
    """The line of every key and list item under ``node``, merge keys and aliases followed, within the
    same bounds as :func:`check_data` (depth, and values stood for through aliases)."""
    located = _Located()
    visited = 0

    def walk(node: yaml.Node, path: KeyPath, depth: int) -> None:
        nonlocal visited
        visited += 1
        if visited > max_values:
            raise _too_many_values(source, max_values)
        if isinstance(node, yaml.ScalarNode):
            if node.style in ("'", '"'):
                located.quoted.add(path)
            return
        if depth > MAX_DEPTH:
            raise UnreadableDocumentError(
                f"{_where(path[:8])}...: nested deeper than {MAX_DEPTH} levels", source=source, key=dotted(path)
            )
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE_TAG:
                    merged = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                    for merged_node in merged:
                        walk(merged_node, path, depth)
                    continue
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.id}>"
                line = key_node.start_mark.line + 1
                if key in first:
                    located.repeated.append(RepeatedKey((*path, key), line, first[key]))
                else:
                    first[key] = line
                located.lines[(*path, key)] = line
                walk(value_node, (*path, key), depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                located.lines.setdefault((*path, index), item.start_mark.line + 1)
                walk(item, (*path, index), depth + 1)

    if node is not None:
        walk(node, (), 1)
    return located


def _too_many_values(source: str, max_values: int) -> UnreadableDocumentError:
    return UnreadableDocumentError(
        f"stands for more than {max_values:,} values through YAML aliases (a document of "
        f"{ALIAS_EXPANSION} values per character at most)",
        source=source,
    )


def _where(path: KeyPath) -> str:
    return dotted(path) or "the top level"


def _kind(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"
