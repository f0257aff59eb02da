"""The engine, but ``set_target`` raises: no program can start."""

from __future__ import annotations

from typing import Any

from csconform.engine import CAPABILITIES, TARGETS, current_target, reset, use_target  # noqa: F401
from tests.meta.differential_wrappers import delegate


def set_target(name: str) -> None:
    raise ValueError(f"no target {name} here")


def __getattr__(name: str) -> Any:
    return delegate(name)
