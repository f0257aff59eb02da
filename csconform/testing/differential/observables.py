"""What is compared after every statement: its result, and the state of every live interface object.

The state is read through the interface only: parameters' ``data`` (``weights``) and ``grad``
(``grads``); an optimizer's ``global_step``, ``current_lrs()``, the per-parameter ``state`` of its
``state_dict()`` and its param groups' hyperparameters (not ``params``, not ``lr``, which may hold a
schedule object: the rates are compared through ``current_lrs``); a GradScaler's ``get_scale()`` and
``state_dict()``. Observables are listed in :data:`OBSERVABLES` from the most telling to the least;
a statement that changes several is reported under the most severe kind, then the first in this order.

Results that describe an implementation's own bookkeeping are compared only as "a result"
(:data:`OPAQUE_RESULTS`): an iterator's ``state()`` need only restore on the same implementation, and
a ``state_dict()`` is compared through the state observables above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from csconform.testing.differential.compare import Opaque, comparable

OPTIMIZERS = frozenset({"SGD", "Adam", "AdamW"})

OBSERVABLES = (
    "result",
    "weights",
    "grads",
    "optimizer.global_step",
    "optimizer.lrs",
    "optimizer.state",
    "scaler.scale",
    "scaler.state",
    "optimizer.param_groups",
)

BOOKKEEPING = frozenset({"optimizer.param_groups"})
"""Observables whose differences never stop a program: how hyperparameters are stored is compared,
and what they do shows in the weights."""

OPAQUE_RESULTS = ("DatasetIterator.state", ".state_dict")


def opaque_result(label: str) -> bool:
    return label == OPAQUE_RESULTS[0] or label.endswith(OPAQUE_RESULTS[1])


def _hyperparameters(optimizer: Any) -> list[dict[str, Any]]:
    groups = optimizer.param_groups
    return [{key: value for key, value in group.items() if key not in ("params", "lr")} for group in groups]


_OPTIMIZER: dict[str, Callable[[Any], Any]] = {
    "optimizer.global_step": lambda optimizer: optimizer.global_step,
    "optimizer.lrs": lambda optimizer: optimizer.current_lrs(),
    "optimizer.state": lambda optimizer: dict(optimizer.state_dict()["state"]),
    "optimizer.param_groups": _hyperparameters,
}
READERS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "Parameter": {"weights": lambda parameter: parameter.data, "grads": lambda parameter: parameter.grad},
    **{kind: _OPTIMIZER for kind in OPTIMIZERS},
    "GradScaler": {
        "scaler.scale": lambda scaler: scaler.get_scale(),
        "scaler.state": lambda scaler: scaler.state_dict(),
    },
}
"""Interface kind -> observable -> how to read it from an object of that kind."""


def _read(read: Callable[[Any], Any], obj: Any, workdir: Path) -> Any:
    try:
        return comparable(read(obj), workdir)
    except Exception as error:  # noqa: BLE001 - reading state that fails is itself an observation
        return Opaque(f"raised {type(error).__name__}")


def observe_state(namespace: Mapping[str, Any], kinds: Mapping[str, str], workdir: Path) -> dict[str, dict[str, Any]]:
    """Observable -> variable -> its value, for every live object of a kind that has state."""
    state: dict[str, dict[str, Any]] = {name: {} for name in OBSERVABLES[1:]}
    for variable, kind in kinds.items():
        if variable in namespace:
            for observable, read in READERS.get(kind, {}).items():
                state[observable][variable] = _read(read, namespace[variable], workdir)
    return state
