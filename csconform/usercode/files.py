"""The Python files a lint run reads: the files named, and every ``.py`` file under the folders named.

A folder walk leaves out what is not the project's own code (``.git``, ``__pycache__``, virtual
environments: any folder holding a ``pyvenv.cfg``, and the usual names of tool caches) and the
``exclude`` patterns of ``[tool.csconform]``; a symbolic link to a folder is followed once, never
into a loop. Every entry named ``*.py`` that is not a folder is kept, so that one the reader cannot
use (a FIFO, a dangling link, a link loop) is reported unreadable rather than skipped in silence.
"""

from __future__ import annotations

import os
from pathlib import Path

from csconform.errors import InvalidInputError
from csconform.findings.config import ProjectConfig

SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox"}) | frozenset(
    {".mypy_cache", ".ruff_cache", ".pytest_cache", "node_modules", "site-packages"}
)
SUFFIX = ".py"


def _skipped(folder: Path) -> bool:
    return folder.name in SKIPPED_FOLDERS or (folder / "pyvenv.cfg").is_file()


def _walk(root: Path, settings: ProjectConfig) -> list[Path]:
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for folder, subfolders, names in os.walk(root, followlinks=True):
        here = Path(folder)
        try:
            info = here.stat()
        except OSError:
            subfolders[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:  # a link back into a folder already walked
            subfolders[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        subfolders[:] = sorted(
            name for name in subfolders if not _skipped(here / name) and not settings.excluded(here / name)
        )
        for name in sorted(names):
            path = here / name
            if name.endswith(SUFFIX) and not settings.excluded(path):
                found.append(path)
    return found


def python_files(arguments: list[str], settings: ProjectConfig) -> list[Path]:
    """The files to lint, in the order named (a folder's files sorted by path)."""
    files: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = _walk(path, settings)
            if not found:
                raise InvalidInputError(f"{path}: no .py file under this directory")
            files += found
        else:
            files.append(path)  # a missing or unusable file is reported unreadable by the reader
    return list(dict.fromkeys(files))
