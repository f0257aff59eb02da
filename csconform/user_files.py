"""Reading the files users hand to csconform: bounded, decoded and checked before anything is built.

Every reader of a file that a user chooses — model configs, spec and triage YAML, calibration CSV,
benchmark JSON, ``.kgraph`` instances, expected-failure lists, checkpoints — starts here, so every
file meets the same checks, in this order:

1. it is a regular file (a folder is named as such; a FIFO or a device is refused before it is
   opened, since reading one can block forever);
2. its size is within the reader's bound, checked before a byte is read (and the read itself
   stops one byte past the bound, should the file grow meanwhile);
3. text is UTF-8, with or without a byte-order mark; a UTF-16 or UTF-32 byte-order mark, or a NUL
   byte, is named as such; an undecodable byte is named by line and column;
4. a structured document (JSON here, YAML in :mod:`csconform.spec.yaml_io`) is refused when it is
   nested deeper than :data:`MAX_DEPTH`, holds a non-finite number (NaN, an infinity, or a literal
   too large for a float), repeats a key in one mapping, or (YAML) expands through aliases into
   more values than it has characters.

Every refusal is an :class:`~csconform.errors.InputFileError` (or the error class the caller
passes) whose one-line message names the file, then the line or the key path, then what was
expected.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from csconform.errors import CsConformError, InputFileError

MAX_TEXT_BYTES = 16 * 2**20
"""Default bound on a text file: far above any config, spec, instance or measured-runs table."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and lists accepted in a structured document."""

_OTHER_ENCODINGS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _human(size_bytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.3g} {unit}"
    return f"{size_bytes} bytes"


def read_bytes(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_TEXT_BYTES,
    what: str = "file",
    error: type[CsConformError] = InputFileError,
) -> bytes:
    """The contents of the regular file ``path``, at most ``max_bytes`` of them."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: file not found (expected a {what})") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{path}: is a folder; expected a {what}")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: not a regular file (a pipe, socket or device); expected a {what}")
    if info.st_size > max_bytes:
        raise error(f"{path}: {_human(info.st_size)} is larger than a {what} may be ({_human(max_bytes)})")
    try:
        with open(path, "rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{path}: larger than a {what} may be ({_human(max_bytes)})")
    return data


def decode_text(data: bytes, source: str, what: str = "file", error: type[CsConformError] = InputFileError) -> str:
    """UTF-8 text (a leading byte-order mark is dropped); other encodings and binary data are named."""
    for mark, encoding in _OTHER_ENCODINGS:
        if data.startswith(mark):
            raise error(f"{source}: not UTF-8 text but {encoding} (byte-order mark); expected the {what} in UTF-8")
    if b"\x00" in data:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise error(f"{source}: not UTF-8 text but binary data (a NUL byte on line {line}); expected a {what}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            f"{source}: not UTF-8 text (line {line}, column {column}: byte 0x{data[exc.start]:02x}); "
            f"expected the {what} in UTF-8"
        ) from None


def read_text(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_TEXT_BYTES,
    what: str = "file",
    error: type[CsConformError] = InputFileError,
) -> str:
    """A UTF-8 text file, bounded (see the module docstring)."""
    return decode_text(read_bytes(path, max_bytes, what, error), str(path), what, error)


# --- structured documents --------------------------------------------------------------------------------


def key_path(parts: tuple[Any, ...]) -> str:
    """``model.layers[3].width``-style path of a value inside a document."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the top level"


def _walk(document: Any) -> Iterator[tuple[tuple[Any, ...], Any, int]]:
    """(key path, value, depth) of every node, iteratively (a deep document cannot overflow the stack)."""
    stack: list[tuple[tuple[Any, ...], Any, int]] = [((), document, 0)]
    while stack:
        path, value, depth = stack.pop()
        yield path, value, depth
        if isinstance(value, dict):
            stack.extend(((*path, key), item, depth + 1) for key, item in reversed(list(value.items())))
        elif isinstance(value, list | tuple):
            stack.extend(((*path, index), item, depth + 1) for index, item in reversed(list(enumerate(value))))


def check_document(
    document: Any,
    source: str,
    what: str = "file",
    error: type[CsConformError] = InputFileError,
    max_nodes: int | None = None,
) -> Any:
    """Refuse a parsed document nested deeper than MAX_DEPTH or holding a non-finite number.

    ``max_nodes`` bounds the values visited, counting a node reached through several YAML aliases
    each time: a document without aliases has fewer values than bytes, so the length of its text
    bounds it, while aliases of aliases can stand for exponentially many ("billion laughs"). A
    node that refers to itself is nested without end, so the depth bound refuses it.
    """
    for count, (path, value, depth) in enumerate(_walk(document)):
        if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):  # the 65th level of containers
            raise error(f"{source}: {key_path(path[:8])}...: nested deeper than {MAX_DEPTH} levels; not a {what}")
        if isinstance(value, float) and not math.isfinite(value):
            raise error(f"{source}: {key_path(path)}: {value} is not a finite number")
        if max_nodes is not None and count > max_nodes:
            raise error(f"{source}: repeats nodes through aliases into more values than the file has characters")
    return document


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            raise _DuplicateKey(key)
        mapping[key] = value
    return mapping


def parse_json(text: str, source: str, what: str = "JSON file", error: type[CsConformError] = InputFileError) -> Any:
    """A JSON document, checked (see :func:`check_document`); a repeated key is refused."""
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise error(f"{source}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise error(f"{source}: key {exc.key!r} appears twice in one object") from None
    except RecursionError:
        raise error(f"{source}: nested deeper than {MAX_DEPTH} levels; not a {what}") from None
    return check_document(document, source, what, error, max_nodes=len(text) + 16)


def read_json(
    path: str | os.PathLike[str],
    max_bytes: int = MAX_TEXT_BYTES,
    what: str = "JSON file",
    error: type[CsConformError] = InputFileError,
) -> Any:
    """A bounded UTF-8 JSON file, checked (see the module docstring)."""
    return parse_json(read_text(path, max_bytes, what, error), str(path), what, error)


def expect_mapping(document: Any, source: str, what: str, error: type[CsConformError] = InputFileError) -> dict:
    """``document`` if it is a mapping (what every structured file of csconform is at its top)."""
    if not isinstance(document, dict):
        raise error(f"{source}: expected {what} (a mapping of keys), got {_kind(document)}")
    return document


def _kind(value: Any) -> str:
    if value is None:
        return "an empty document"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"
