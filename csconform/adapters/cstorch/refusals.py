"""Translate the package's refusals into the interface's typed errors, keeping its own message."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def refusals(mapping: Mapping[type[Exception], type[Exception]]) -> Iterator[None]:
    """Inside the block, an exception of a mapped type is re-raised as its typed counterpart.

    Only the call that makes a documented refusal is wrapped, so an unexpected error of the same
    built-in type elsewhere is not disguised.
    """
    try:
        yield
    except tuple(mapping) as exc:
        for source, target in mapping.items():
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise
