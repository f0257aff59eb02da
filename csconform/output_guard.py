"""Where csconform may write: never over a file the command reads, never over what the package ships.

Every file csconform writes goes through :func:`write_text`, :func:`write_csv` or
:func:`save_figure`, which

- refuse a path that resolves to a protected file: one of the running command's inputs (by name,
  after following links and ``..``, or as a hard link to the same file) or anything inside the
  installed package and its spec (the calibration, the model configs, the rules) unless the caller
  explicitly replaces a shipped file;
- refuse a path that is a folder, or lies under a file;
- write atomically: the contents go to a temporary file in the same folder, which is renamed over
  the target once complete, so a failed or interrupted run leaves the previous file (or none),
  never half of one. A path that is a symbolic link is written through, at the link's target
  (whose folder must exist: no folder is made for a dangling link).

The command line (:mod:`csconform.cli`) protects each command's inputs for the length of the
command and checks every output path it names before any work starts (each command declares
its input and output options), so a collision is refused in a second, not after an hour of
solving. The protection is process-wide (report sections render in worker threads).
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from csconform.errors import OutputPathError


@dataclass(frozen=True)
class Protected:
    """A file the running command reads: how the user named it (``--model-config cfg.json``)."""

    label: str
    path: Path


_protected: list[Protected] = []


def _shipped_roots() -> list[Path]:
    from csconform.spec.loader import default_specs_dir

    package = Path(__file__).resolve().parent
    return [package, default_specs_dir().resolve()]


@contextlib.contextmanager
def protect(inputs: Iterable[tuple[str, str | os.PathLike[str]]]) -> Iterator[None]:
    """Protect ``(label, path)`` inputs from every write until the block ends."""
    added = [Protected(label, Path(path)) for label, path in inputs]
    _protected.extend(added)
    try:
        yield
    finally:
        for entry in added:
            _protected.remove(entry)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str | os.PathLike[str],
    option: str = "output",
    suffixes: Sequence[str] = (),
    replace_shipped: bool = False,
    extra_inputs: Iterable[tuple[str, str | os.PathLike[str]]] = (),
) -> Path:
    """The real path ``path`` will be written at; refused (OutputPathError) if it may not be."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputPathError(f"{option}: an empty path; name the file to write")
    named = Path(text)
    if suffixes and named.suffix.lower() not in suffixes:
        raise OutputPathError(
            f"{option} {text}: the file name must end in {' or '.join(suffixes)} (it says what is written)"
        )
    target = Path(os.path.realpath(named))
    inputs = [*_protected, *(Protected(label, Path(p)) for label, p in extra_inputs)]
    for entry in inputs:
        if target == Path(os.path.realpath(entry.path)) or _same_file(target, entry.path):
            raise OutputPathError(
                f"{option} {text} is the input {entry.label} {entry.path}; writing it would destroy the input "
                "(choose another output path)"
            )
    if not replace_shipped:
        for root in _shipped_roots():
            if target == root or root in target.parents:
                raise OutputPathError(
                    f"{option} {text} lies inside csconform's installed files ({root}); choose a path outside them"
                )
    if target.is_dir():
        raise OutputPathError(f"{option} {text} is a folder; name a file in it")
    _check_nearest_parent_is_a_folder(target, option, text)
    return target


def check_output_folder(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """A folder a command writes files into: not a file, not inside the package, not an input."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputPathError(f"{option}: an empty path; name the folder to write")
    target = Path(os.path.realpath(text))
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{option} {text} is a file; name a folder")
    for entry in _protected:
        if target == Path(os.path.realpath(entry.path)):
            raise OutputPathError(f"{option} {text} is the input {entry.label}; choose another folder")
    for root in _shipped_roots():
        if target == root or root in target.parents:
            raise OutputPathError(f"{option} {text} lies inside csconform's installed files ({root})")
    _check_nearest_parent_is_a_folder(target, option, text)
    return target


def _check_nearest_parent_is_a_folder(target: Path, option: str, text: str) -> None:
    """The closest existing ancestor of ``target`` must be a folder, or nothing can be written there."""
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputPathError(f"{option} {text}: {parent} is a file, not a folder")
            return


def _file_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_bytes(path: str | os.PathLike[str], data: bytes, option: str = "output", **checks: Any) -> Path:
    """Write ``data`` to ``path`` atomically, after :func:`check_output`; returns the path written."""
    target = check_output(path, option, **checks)
    try:
        if not Path(path).is_symlink():  # a link is written through, never made to point somewhere new
            target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputPathError(f"{option} {os.fspath(path)}: cannot write there: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _file_mode(target))
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OutputPathError(f"{option} {os.fspath(path)}: cannot write there: {exc.strerror or exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Path(path)


def replace_input(path: str | os.PathLike[str], read: bytes, data: bytes, option: str = "--in-place") -> Path:
    """Rewrite the input file ``path`` with ``data``, atomically, because the user asked for exactly
    that (``--fix --in-place``): refused when the file is no longer the ``read`` bytes it was (changed
    since it was read: rewriting it would lose that change), or is part of the installed package."""
    target = Path(os.path.realpath(path))
    for root in _shipped_roots():
        if target == root or root in target.parents:
            raise OutputPathError(f"{option} {os.fspath(path)} lies inside csconform's installed files ({root})")
    try:
        current = target.read_bytes()
    except OSError as exc:
        raise OutputPathError(f"{option} {os.fspath(path)}: cannot read it again: {exc.strerror or exc}") from None
    if current != read:
        raise OutputPathError(f"{option} {os.fspath(path)} changed since it was read; nothing written (run again)")
    protected = [entry for entry in _protected if _same_file(target, entry.path)]
    for entry in protected:
        _protected.remove(entry)
    try:
        return write_bytes(path, data, option)
    finally:
        _protected.extend(protected)


def write_text(
    path: str | os.PathLike[str], text: str, option: str = "output", encoding: str = "utf-8", **checks: Any
) -> Path:
    """Write ``text`` (UTF-8 unless told) to ``path`` atomically (see :func:`write_bytes`)."""
    return write_bytes(path, text.encode(encoding), option, **checks)


def write_csv(frame: Any, path: str | os.PathLike[str], option: str = "output", **to_csv: Any) -> Path:
    """A pandas frame as CSV (``to_csv`` keywords as pandas takes them), written atomically."""
    return write_text(path, frame.to_csv(None, **to_csv), option)


FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def save_figure(figure: Any, path: str | os.PathLike[str], option: str = "output", **savefig: Any) -> Path:
    """A matplotlib figure, in the format its file name ends in (png, svg or pdf), written atomically."""
    suffix = Path(path).suffix.lower()
    check_output(path, option, suffixes=FIGURE_SUFFIXES)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=suffix.lstrip("."), **savefig)
    return write_bytes(path, buffer.getvalue(), option)
