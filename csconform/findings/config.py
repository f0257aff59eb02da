"""The project's own settings for ``lint`` and ``validate``: ``[tool.csconform]`` in ``pyproject.toml``.

    [tool.csconform]
    release = "2.10"                     # the release to judge for (default: the newest known)
    ignore = ["CONFIG-002"]              # rules never reported
    exclude = ["build/*", "*/legacy/*"]  # files a directory walk leaves out (shell patterns)
    [tool.csconform.per-file-ignores]
    "tests/*" = ["CODE-010"]

The nearest ``pyproject.toml`` with a ``[tool.csconform]`` table, looking up from the current folder,
is read (as ruff finds its own); ``--config FILE`` names one, ``--isolated`` reads none. An unknown
key or a value of the wrong type is refused, naming it.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from csconform.documents import read_document
from csconform.errors import InvalidInputError

KEYS = ("release", "ignore", "exclude", "per-file-ignores")


class ConfigError(InvalidInputError):
    """``[tool.csconform]`` holds a key csconform does not know or a value of the wrong type."""


@dataclass(frozen=True)
class ProjectConfig:
    path: Path | None = None
    """The ``pyproject.toml`` read (None: no settings)."""
    release: str | None = None
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = field(default=())

    @property
    def root(self) -> Path:
        """The folder patterns are relative to: the pyproject.toml's, else the current one."""
        return self.path.parent if self.path is not None else Path.cwd()

    def _relative(self, file: str | Path) -> PurePath:
        path = Path(file).absolute()
        try:
            return path.relative_to(self.root.absolute())
        except ValueError:
            return path

    def excluded(self, file: str | Path) -> bool:
        relative = self._relative(file).as_posix()
        return any(fnmatch.fnmatch(relative, pattern) for pattern in self.exclude)

    def ignores(self, file: str | Path) -> frozenset[str]:
        """The rules never reported for ``file``."""
        relative = self._relative(file).as_posix()
        extra = [rules for pattern, rules in self.per_file_ignores if fnmatch.fnmatch(relative, pattern)]
        return self.ignore.union(*extra)


def find_config(start: Path | None = None) -> ProjectConfig:
    """The settings of the nearest ``pyproject.toml`` with ``[tool.csconform]`` above ``start``."""
    folder = (start or Path.cwd()).absolute()
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            document = read_document(pyproject, what="pyproject.toml")
            if "csconform" in document.data.get("tool", {}):
                return _settings(document.data["tool"]["csconform"], pyproject)
    return ProjectConfig()


def load_config(path: Path) -> ProjectConfig:
    """The settings of the ``pyproject.toml`` ``path`` (its ``[tool.csconform]`` table, maybe empty)."""
    data = read_document(path, what="pyproject.toml").data
    return _settings(data.get("tool", {}).get("csconform", {}), path)


def _settings(table: Any, path: Path) -> ProjectConfig:
    where = f"{path}: [tool.csconform]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(KEYS)}"
            raise ConfigError(f"{where}: unknown key {key!r}{hint}")
    release = table.get("release")
    if release is not None and not isinstance(release, str):
        raise ConfigError(f'{where}: release must be text such as "2.10", got {release!r}')
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, Mapping):
        raise ConfigError(f"{where}: per-file-ignores must be a table of pattern = [rules]")
    return ProjectConfig(
        path=path,
        release=release,
        ignore=frozenset(_texts(table.get("ignore", []), f"{where}: ignore")),
        exclude=tuple(_texts(table.get("exclude", []), f"{where}: exclude")),
        per_file_ignores=tuple(
            (str(pattern), frozenset(_texts(rules, f"{where}: per-file-ignores.{pattern}")))
            for pattern, rules in per_file.items()
        ),
    )


def _texts(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{where} must be a list of text, got {value!r}")
    return [item.strip() for item in value]
