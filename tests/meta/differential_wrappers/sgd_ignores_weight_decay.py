"""The engine, but SGD ignores weight_decay (it still accepts and reports it)."""

from __future__ import annotations

from typing import Any

from csconform.engine.optim.optimizers import SGD as _SGD
from tests.meta.differential_wrappers import delegate, submodule_with

VERSION = "sgd-ignores-weight-decay 1.0"


class SGD(_SGD):
    def _update(self, data: Any, grad: Any, state: dict[str, Any], lr: Any, group: Any) -> Any:
        return super()._update(data, grad, state, lr, {**group, "weight_decay": 0.0})


optim = submodule_with("optim", SGD=SGD)


def __getattr__(name: str) -> Any:
    return delegate(name)
