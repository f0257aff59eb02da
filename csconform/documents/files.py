"""Bytes and text of a file a user names: bounded, decoded, refused in one line when unusable.

Every file csconform reads — configs, params files, spec and triage YAML, measured-runs CSV,
benchmark JSON, ``.kgraph`` instances, checkpoints, Python sources — comes through here, so every
file meets the same checks, in this order:

1. it is a regular file (a folder is named as such; a FIFO or a device is refused before it is
   opened, since reading one can block forever);
2. its size is within the reader's bound, checked before a byte is read (and the read itself
   stops one byte past the bound, should the file grow meanwhile);
3. text is UTF-8, with or without a byte-order mark; a UTF-16 or UTF-32 byte-order mark, or a NUL
   byte, is named as such; an undecodable byte is named by line and column.

Each refusal is an :class:`~csconform.errors.UnreadableDocumentError` naming the file first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from csconform.errors import UnreadableDocumentError

MAX_TEXT_BYTES = 16 * 2**20
"""Default bound on a text file: far above any config, spec, instance, source file or measured-runs table."""

_OTHER_ENCODINGS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _human(size_bytes: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes} bytes"


def read_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_TEXT_BYTES, what: str = "file") -> bytes:
    """The contents of the regular file ``path``, at most ``max_bytes`` of them."""
    path = Path(path)
    source = str(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise UnreadableDocumentError(f"file not found (expected a {what})", source=source) from None
    except OSError as exc:  # a symlink loop, a permission, a name too long
        raise UnreadableDocumentError(f"cannot read the {what}: {exc.strerror or exc}", source=source) from None
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableDocumentError(f"is a folder; expected a {what}", source=source)
    if not stat.S_ISREG(info.st_mode):
        raise UnreadableDocumentError(
            f"not a regular file (a pipe, socket or device); expected a {what}", source=source
        )
    if info.st_size > max_bytes:
        raise UnreadableDocumentError(
            f"{_human(info.st_size)} is larger than a {what} may be ({_human(max_bytes)})", source=source
        )
    try:
        with open(path, "rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise UnreadableDocumentError(f"cannot read the {what}: {exc.strerror or exc}", source=source) from None
    if len(data) > max_bytes:
        raise UnreadableDocumentError(f"larger than a {what} may be ({_human(max_bytes)})", source=source)
    return data


def decode_text(data: bytes, source: str, what: str = "file") -> str:
    """UTF-8 text (a leading byte-order mark is dropped); other encodings and binary data are named."""
    for mark, encoding in _OTHER_ENCODINGS:
        if data.startswith(mark):
            raise UnreadableDocumentError(
                f"not UTF-8 text but {encoding} (byte-order mark); expected the {what} in UTF-8", source=source
            )
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise UnreadableDocumentError(
            f"not UTF-8 text but binary data (a NUL byte); expected a {what}", source=source, line=line
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UnreadableDocumentError(
            f"not UTF-8 text (column {column}: byte 0x{data[exc.start]:02x}); expected the {what} in UTF-8",
            source=source,
            line=line,
        ) from None


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_TEXT_BYTES, what: str = "file") -> str:
    """A UTF-8 text file, bounded (see the module docstring)."""
    return decode_text(read_bytes(path, max_bytes, what), str(path), what)
