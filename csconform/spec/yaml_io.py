"""Safe YAML reading that turns every failure into a :class:`SpecError` naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from csconform.errors import SpecError

# libyaml's safe loader when PyYAML was built with it: the same documents, ten times faster (every
# pytest run, and every mutant of a mutation run, loads the whole spec).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, path: Path | str) -> Any:
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = exc.problem or exc.context or "malformed document"
        raise SpecError(f"{path}: {line}invalid YAML: {problem}") from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        # PyYAML raises plain ValueError/TypeError for some malformed scalars and tags.
        raise SpecError(f"{path}: invalid YAML: {exc}") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; a missing, unreadable or non-UTF-8 file is a :class:`SpecError`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None


def read_yaml(path: Path) -> Any:
    return parse_yaml(read_text(path), path)
