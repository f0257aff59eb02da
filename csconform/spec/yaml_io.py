"""Safe YAML reading: every failure is a typed error naming the file and the line or key.

The file is read by :mod:`csconform.user_files` (a regular file, bounded, UTF-8 with or without a
byte-order mark); the document is parsed by PyYAML's safe loader, with one addition: a mapping that
repeats a key is refused (PyYAML keeps the last value silently, so a rule with two ``level:`` lines
would pass with one of them ignored). The parsed document then meets
:func:`csconform.user_files.check_document` (nesting depth, non-finite numbers, aliases).
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from csconform.errors import CsConformError, SpecError
from csconform.user_files import MAX_TEXT_BYTES, check_document
from csconform.user_files import read_text as read_user_text

# libyaml's safe loader when PyYAML was built with it: the same documents, ten times faster (every
# pytest run, and every mutant of a mutation run, loads the whole spec).
_SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SAFE_LOADER):
    """The safe loader, refusing a mapping that repeats a key."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue  # a complex key (PyYAML refuses it: unhashable) or a merge (<<)
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key {key!r} appears twice in one mapping (first on line {seen[key] + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str, path: str | os.PathLike[str], error: type[CsConformError] = SpecError) -> Any:
    try:
        document = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "malformed document"
        raise error(f"{path}: {line}invalid YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}: invalid YAML: nested too deeply") from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        # PyYAML raises plain ValueError/TypeError for some malformed scalars and tags.
        raise error(f"{path}: invalid YAML: {exc}") from None
    return check_document(document, str(path), "YAML file", error, max_nodes=len(text) + 16)


def read_text(
    path: str | os.PathLike[str], error: type[CsConformError] = SpecError, max_bytes: int = MAX_TEXT_BYTES
) -> str:
    """The UTF-8 text of a YAML file, through :mod:`csconform.user_files` (a regular file, bounded, a
    byte-order mark accepted); any problem is an ``error`` naming the file."""
    return read_user_text(path, max_bytes, "YAML file", error)


def read_yaml(
    path: str | os.PathLike[str], error: type[CsConformError] = SpecError, max_bytes: int = MAX_TEXT_BYTES
) -> Any:
    return parse_yaml(read_text(path, error, max_bytes), path, error)
