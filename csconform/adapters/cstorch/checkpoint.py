"""Capability ``runner`` (checkpoint files): ``cstorch.save`` and ``cstorch.load``, the package's format.

A checkpoint is the package's HDF5 file (storage/save.py): the nested state is flattened with
torch's pytree, every leaf is written with its metadata, and a ``__SUCCESS__`` flag is set in the
file's global metadata last; the writer puts the file under a temporary name and renames it when
the write succeeded (cerebras/appliance/storage/h5_storage.py, ``H5Writer``). The package refuses to
write over an existing checkpoint and refuses to load one without the flag. ``load`` gives back
deferred values that read the file lazily; the adapter reads them all, so the caller gets plain
NumPy arrays and Python values. Everything the package refuses (an existing path, an unreadable or
partial file) becomes a CheckpointError with the package's message.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import cerebras.pytorch as cstorch
import torch
from cerebras.appliance.storage.serializers import DeferredObject

from csconform.adapters.cstorch import backend
from csconform.errors import CheckpointError

_READ_ERRORS = (OSError, ValueError, RuntimeError, KeyError, TypeError, EOFError, pickle.UnpicklingError)


def save(path: str | os.PathLike[str], state: Mapping[str, Any]) -> Path:
    """``cstorch.save(state, path)``."""
    backend.cpu_backend()
    try:
        cstorch.save(dict(state), str(path))
    except FileExistsError as exc:
        raise CheckpointError(str(exc)) from exc
    return Path(path)


def _materialized(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone().cpu().numpy()
    if isinstance(value, DeferredObject):
        return _materialized(value.value)
    if isinstance(value, dict):
        return {key: _materialized(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_materialized(item) for item in value)
    return value


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``cstorch.load(path)``, every deferred value read."""
    backend.cpu_backend()
    try:
        return _materialized(cstorch.load(str(path)))
    except _READ_ERRORS as exc:
        raise CheckpointError(f"cannot load checkpoint {path}: {exc}") from exc
