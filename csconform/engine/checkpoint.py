"""Checkpoints: written atomically, checksummed, verified before anything is loaded.

pipelined-execution#Layer pipelined mode: at specified intervals all the weights are downloaded to the
chief node to save a checkpoint. A checkpoint holds everything a run needs to resume bit-exactly:
model weights, optimizer state (with ``global_step``), grad-scaler state and the data pipeline's
position and random state (the sections in ``REQUIRED_SECTIONS``).

File format (self-describing, no pickle):

    b"CSCKPT1\\n" + sha256(payload) as 64 hex digits + b"\\n" + payload

where the payload is a NumPy ``.npz`` archive holding one array per leaf of the nested state and a
JSON manifest (``__manifest__``) that records how to rebuild the nesting and the Python type of
every leaf. The file is written to a temporary name, fsynced and renamed over the target, so a
crash never leaves a half-written checkpoint under the real name. A file whose digest does not match
(truncated, bit-flipped) or that lacks a section is refused with CheckpointError, never loaded.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from csconform.arguments import check_path
from csconform.documents import check_data, parse_document, read_bytes
from csconform.errors import CheckpointError, UnreadableDocumentError

MAGIC = b"CSCKPT1\n"
DIGEST_HEX_CHARS = 64
REQUIRED_SECTIONS = ("step", "model", "optimizer", "grad_scaler", "data")
MANIFEST_KEY = "__manifest__"


# --- flattening nested state into named arrays --------------------------------------------------------


def _flatten(value: Any, path: str, arrays: dict[str, np.ndarray]) -> Any:
    """Return the manifest node for ``value``; store its array leaves in ``arrays``."""
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) or "/" in key:
                raise CheckpointError(f"checkpoint keys must be strings without '/', got {key!r} at {path!r}")
        return {"dict": {key: _flatten(item, f"{path}/{key}", arrays) for key, item in value.items()}}
    if isinstance(value, list | tuple):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_flatten(item, f"{path}/{i}", arrays) for i, item in enumerate(value)]}
    if value is None:
        return {"none": None}
    # NumPy scalars first: np.float64 is also a Python float, and its dtype must come back.
    if isinstance(value, np.ndarray | np.generic):
        if np.asarray(value).dtype.hasobject:  # it would need pickle, which load() refuses
            raise CheckpointError(f"cannot store an array of Python objects at {path!r} in a checkpoint")
        arrays[path] = np.asarray(value)
        return {"array": path, "scalar": isinstance(value, np.generic)}
    for scalar_type in (bool, int, float, str):  # a subclass (an IntEnum, say) is stored as its base type
        if isinstance(value, scalar_type):
            return {scalar_type.__name__: scalar_type(value)}
    raise CheckpointError(f"cannot store {type(value).__name__} at {path!r} in a checkpoint")


def _unflatten(node: dict[str, Any], arrays: Any) -> Any:
    kind, payload = next(iter(node.items()))
    if kind == "dict":
        return {key: _unflatten(child, arrays) for key, child in payload.items()}
    if kind in ("list", "tuple"):
        items = [_unflatten(child, arrays) for child in payload]
        return items if kind == "list" else tuple(items)
    if kind == "none":
        return None
    if kind in ("bool", "int", "float", "str"):
        return payload
    if kind == "array":
        array = arrays[payload]
        return array[()] if node.get("scalar") else array
    raise CheckpointError(f"unknown manifest entry {kind!r}")


def encode(state: dict[str, Any]) -> bytes:
    """The complete file contents for ``state`` (magic, digest, payload)."""
    if not isinstance(state, dict):
        raise CheckpointError(f"a checkpoint holds a state dictionary, got {type(state).__name__}")
    missing = [section for section in REQUIRED_SECTIONS if section not in state]
    if missing:
        raise CheckpointError(f"checkpoint state lacks section(s) {missing}; required: {list(REQUIRED_SECTIONS)}")
    arrays: dict[str, np.ndarray] = {}
    try:
        manifest = _flatten(state, "", arrays)
    except RecursionError:
        raise CheckpointError("the checkpoint state is nested too deeply to store") from None
    try:
        check_data(manifest, "the checkpoint state")
    except UnreadableDocumentError as exc:
        raise CheckpointError(str(exc)) from None
    buffer = io.BytesIO()
    contents: dict[str, Any] = {MANIFEST_KEY: np.array(json.dumps(manifest)), **arrays}
    np.savez(buffer, **contents)
    payload = buffer.getvalue()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def decode(data: bytes, source: str = "<bytes>") -> dict[str, Any]:
    """Verify and decode file contents; refuse anything damaged."""
    header_length = len(MAGIC) + DIGEST_HEX_CHARS + 1
    if len(data) < header_length or not data.startswith(MAGIC) or data[header_length - 1 : header_length] != b"\n":
        raise CheckpointError(f"{source} is not a csconform checkpoint (bad or truncated header)")
    digest = data[len(MAGIC) : len(MAGIC) + DIGEST_HEX_CHARS].decode(errors="replace")
    payload = data[header_length:]
    if hashlib.sha256(payload).hexdigest() != digest:
        raise CheckpointError(f"{source} is corrupted or truncated: its sha256 checksum does not match")
    try:
        _check_members(payload, source)
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            manifest = parse_document(
                str(archive[MANIFEST_KEY]), source, "json", what="checkpoint manifest", top="any"
            ).data
            arrays = {name: archive[name] for name in archive.files if name != MANIFEST_KEY}
        state = _unflatten(manifest, arrays)
    except UnreadableDocumentError as exc:
        raise CheckpointError(str(exc)) from None
    except (ValueError, KeyError, TypeError, AttributeError, StopIteration, OSError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"{source} has a valid checksum but an unreadable payload: {exc}") from exc
    check_sections(state, source)
    return state


def _check_members(payload: bytes, source: str) -> None:
    """The archive's members are stored, not compressed (as :func:`encode` writes them), so together
    they cannot unpack into more than the payload: a crafted archive cannot exhaust memory."""
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        members = archive.infolist()
    if any(member.compress_type != zipfile.ZIP_STORED for member in members) or (
        sum(member.file_size for member in members) > len(payload)
    ):
        raise CheckpointError(f"{source} holds compressed or oversized members; csconform never writes those")


def check_sections(state: Any, source: str) -> None:
    if not isinstance(state, dict):
        raise CheckpointError(f"{source} does not hold a state dictionary")
    missing = [section for section in REQUIRED_SECTIONS if section not in state]
    if missing:
        raise CheckpointError(f"{source} lacks section(s) {missing}; required: {list(REQUIRED_SECTIONS)}")


def save(path: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, rename).

    The temporary file is named ``.<name>.<pid>.<random>.tmp``; a process that dies before the rename
    leaves it behind, and the next save or load in that folder removes it (:func:`sweep_temporaries`).
    """
    target = check_path("path", path)
    data = encode(state)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_temporaries(target.parent)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


_TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")
_OLD_TEMPORARY = re.compile(r"^\..+\.ckpt\.[A-Za-z0-9_]{8}\.tmp$")  # before the process id was in the name
STALE_TEMPORARY_S = 24 * 3600.0
"""A temporary file older than this is stale whoever wrote it (no checkpoint takes a day to write)."""


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no such process number: leave the file to its age
    return True


def sweep_temporaries(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files of interrupted saves in ``directory``: those whose writing process
    is gone, and any older than a day. Returns the files removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if not (match or _OLD_TEMPORARY.match(entry.name)):
            continue
        try:
            stale = (
                not entry.is_symlink()
                and entry.is_file()
                and (
                    (match is not None and not _running(int(match["pid"])))
                    or now - entry.stat().st_mtime > STALE_TEMPORARY_S
                )
            )
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    return removed


MAX_CHECKPOINT_BYTES = 16 * 2**30
"""Largest checkpoint read: the NumPy engine holds a whole checkpoint in memory."""


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and verify the checkpoint at ``path`` (a regular file of at most MAX_CHECKPOINT_BYTES)."""
    source = check_path("path", path)
    sweep_temporaries(source.parent)
    try:
        data = read_bytes(source, MAX_CHECKPOINT_BYTES, "checkpoint")
    except UnreadableDocumentError as exc:
        raise CheckpointError(f"cannot read checkpoint {exc}") from None
    return decode(data, str(source))


def checkpoint_steps_for(total_steps: int, every_steps: int | None) -> list[int]:
    """The steps (0-based) a run of ``total_steps`` saves at: N-1, 2N-1, ... and the last step."""
    if not every_steps or total_steps <= 0:
        return []
    steps = list(range(every_steps - 1, total_steps, every_steps))
    if steps[-1:] != [total_steps - 1]:
        steps.append(total_steps - 1)
    return steps


def is_checkpoint_step(step: int, total_steps: int, every_steps: int | None) -> bool:
    """Whether ``step`` is one of :func:`checkpoint_steps_for` (computed, not listed: a run of a
    billion steps needs no billion-element set)."""
    if not every_steps or not 0 <= step < total_steps:
        return False
    return (step + 1) % every_steps == 0 or step == total_steps - 1


def path_for_step(directory: str | os.PathLike[str], step: int) -> Path:
    return Path(directory) / f"checkpoint_{step}.ckpt"
