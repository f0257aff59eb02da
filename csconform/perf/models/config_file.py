"""Reading a model config file: bytes, text, JSON or YAML, and the checks every config passes.

A file that is not UTF-8 text (binary, UTF-16), not JSON/YAML, nested absurdly deep, gives a
non-finite number or a key twice (JSON and YAML readers silently keep the last) is refused with a
:class:`~csconform.errors.ModelConfigError` naming the file, never with a traceback.
"""

from __future__ import annotations

import codecs
import json
import math
from pathlib import Path
from typing import Any

import yaml

from csconform.errors import InputFileError, ModelConfigError
from csconform.user_files import read_bytes

MAX_FILE_BYTES = 16 * 2**20  # a config.json is a few kB; anything this large is not one
MAX_DEPTH = 64  # real configs nest a few levels (rope_scaling, id2label, the csconform block)


def read_config(path: str | Path) -> dict[str, Any]:
    """Load a config file: YAML (safe loading) for ``.yaml``/``.yml``, JSON otherwise.

    Every way a file can be unreadable is a :class:`ModelConfigError` naming the file (and the key,
    for a non-finite number or nesting too deep)."""
    path = Path(path)
    source = str(path)
    try:  # a regular file (a pipe would block the read forever), its size checked before reading
        data = read_bytes(path, MAX_FILE_BYTES, "model config")
    except InputFileError as error:
        detail = str(error).removeprefix(f"{source}: ")
        raise ModelConfigError(f"cannot read the file ({detail})", source=source) from None
    text = decode_text(data, source)
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            parsed = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
        else:
            parsed = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise ModelConfigError(f"not valid JSON ({error.msg} at line {error.lineno})", source=source) from None
    except yaml.YAMLError as error:
        raise ModelConfigError(f"not valid YAML ({str(error).splitlines()[0]})", source=source) from None
    except _DuplicateKey as duplicate:
        message = f"field {duplicate.key} is given twice{duplicate.where}"
        raise ModelConfigError(message, source=source, key=duplicate.key) from None
    except RecursionError:
        raise ModelConfigError("nested too deeply to be a model config", source=source) from None
    except ValueError as error:  # e.g. an integer of more digits than Python converts
        raise ModelConfigError(f"unreadable value ({str(error).split(';')[0]})", source=source) from None
    check_values(parsed, source)
    if not isinstance(parsed, dict):
        raise ModelConfigError(
            f"a model config must be an object of fields, got {type(parsed).__name__}", source=source
        )
    return parsed


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a UTF-8 byte-order mark is allowed); anything else is refused clearly."""
    for bom, encoding in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32")):
        if data.startswith(bom):
            raise ModelConfigError(f"the file is {encoding} text; save it as UTF-8", source=source)
    for bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        if data.startswith(bom):
            raise ModelConfigError("the file is UTF-16 text; save it as UTF-8", source=source)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ModelConfigError(
            f"not a text file: NUL byte at offset {nul} (binary data, or UTF-16/UTF-32 text "
            "without a byte-order mark); a model config is UTF-8 text",
            source=source,
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ModelConfigError(
            f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); save it as UTF-8",
            source=source,
        ) from None
    if not text.strip():
        raise ModelConfigError("the file is empty", source=source)
    return text


class _DuplicateKey(ValueError):
    def __init__(self, key: Any, line: int | None = None) -> None:
        super().__init__(key)
        self.key, self.where = str(key), "" if line is None else f" (line {line})"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (the json module silently keeps the last of two)."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice (it silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # resolve YAML merge keys (<<) first, as the base class does
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool):
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def check_values(data: Any, source: str) -> None:
    """Refuse non-finite numbers and nesting deeper than :data:`MAX_DEPTH`, naming the key.

    Each container is visited once: YAML aliases share one object, so a file of nested aliases (a
    "billion laughs") costs its size, not its expansion."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    visited: set[int] = set()
    while stack:
        value, key, depth = stack.pop()
        if isinstance(value, dict | list):
            if id(value) in visited:
                continue
            visited.add(id(value))
        if isinstance(value, float) and not math.isfinite(value):
            raise ModelConfigError(f"field {key} is not a finite number ({value})", source=source, key=key)
        children: Any = (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        )
        for name, child in children:
            path = f"{key}.{name}" if key else str(name)
            if isinstance(child, dict | list) and depth + 1 >= MAX_DEPTH:
                raise ModelConfigError(
                    f"field {path} is nested more than {MAX_DEPTH} levels deep", source=source, key=path
                )
            stack.append((child, path, depth + 1))
