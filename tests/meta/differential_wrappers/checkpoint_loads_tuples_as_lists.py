"""Planted bug: a checkpoint gives its tuples back as lists (as a JSON round trip would)."""

from __future__ import annotations

from typing import Any

from tests.meta.differential_wrappers import delegate, fresh_submodule

VERSION = "checkpoint-loads-tuples-as-lists 1.0"

checkpoint = fresh_submodule("checkpoint", __name__)
_engine_unflatten = checkpoint._unflatten  # the copy's own: its nested calls come back here


def _unflatten(node: dict[str, Any], arrays: Any) -> Any:
    if "tuple" in node:
        return [_unflatten(child, arrays) for child in node["tuple"]]  # planted: the engine builds a tuple
    return _engine_unflatten(node, arrays)


checkpoint._unflatten = _unflatten


def __getattr__(name: str) -> Any:
    return delegate(name)
