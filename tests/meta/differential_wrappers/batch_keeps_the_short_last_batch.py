"""Planted bug: a batch stage's iterator yields the short batch left when its input runs out even with
``drop_remainder=True`` (its ``cardinality()`` still honours drop_remainder)."""

from __future__ import annotations

from typing import Any

from tests.meta.differential_wrappers import delegate, fresh_submodule

VERSION = "batch-keeps-the-short-last-batch 1.0"

data = fresh_submodule("data", __name__)
_EngineBatch = data._Batch


class _Batch(_EngineBatch):
    def _stream(self, rngs: Any) -> Any:
        return _EngineBatch(self.parent, self.batch_size, drop_remainder=False)._stream(rngs)  # planted


data._Batch = _Batch


def __getattr__(name: str) -> Any:
    return delegate(name)
