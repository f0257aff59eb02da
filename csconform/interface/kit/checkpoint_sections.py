"""The sections of a runner's checkpoint, written and read back over any implementation's objects.

The runner interface (:mod:`csconform.interface.runner`) fixes what a checkpoint holds: ``step``,
``model`` (weights by name), ``optimizer`` (``global_step`` and the per-parameter ``state``, keyed by
the parameter's position as text), ``grad_scaler``, ``data`` and, where modules keep random
generators, ``rng``. Every runner packs and unpacks the model, optimizer and GradScaler sections the
same way, through the objects' own ``state_dict``/``load_state_dict`` (the reference engine's, or a
package's behind its adapter), so that way is written once, here. What each runner keeps of its
data pipeline and random generators is its own, and it passes those sections in and restores them
itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from csconform.errors import CheckpointError, InvalidInputError

T = TypeVar("T")


def training_state(
    step: int, model: Any, optimizer: Any, grad_scaler: Any, data: Mapping[str, Any], rng: Mapping[str, Any]
) -> dict[str, Any]:
    """Everything a resumed run needs after ``step``, by section."""
    optimizer_state = optimizer.state_dict()
    return {
        "step": step,
        "model": model.state_dict(),
        "optimizer": {
            "global_step": int(optimizer_state["global_step"]),
            "state": {str(index): entries for index, entries in optimizer_state["state"].items()},
        },
        "grad_scaler": {} if grad_scaler is None else dict(grad_scaler.state_dict()),
        "data": dict(data),
        "rng": dict(rng),
    }


def restore_training_state(
    path: str | Path,
    saved: Mapping[str, Any],
    model: Any,
    optimizer: Any,
    grad_scaler: Any,
    restore_the_rest: Callable[[Mapping[str, Any]], T],
) -> T:
    """Load ``saved`` (read from ``path``) into the run's objects; ``restore_the_rest(saved)`` restores
    what the runner keeps itself (data position, random generators) and its result is returned.

    The optimizer keeps its own hyperparameters (a checkpoint holds its step and state). A section
    that does not fit the run is a CheckpointError naming the checkpoint.
    """
    try:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved_optimizer_state(saved, optimizer))
        if grad_scaler is not None:
            grad_scaler.load_state_dict(saved["grad_scaler"])
        return restore_the_rest(saved)
    except (InvalidInputError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path} does not match this run: {exc}") from exc


def saved_optimizer_state(saved: Mapping[str, Any], optimizer: Any) -> dict[str, Any]:
    """The optimizer's ``state_dict`` to load from a checkpoint's ``optimizer`` section: its step and
    per-parameter state (keys back to positions), with the run's own param groups (hyperparameters)."""
    return {
        "global_step": int(saved["optimizer"]["global_step"]),
        "state": {int(index): entries for index, entries in saved["optimizer"]["state"].items()},
        "param_groups": optimizer.state_dict()["param_groups"],
    }


class _Positioned(Protocol):
    seed_entropy: int

    @property
    def elements_produced(self) -> int: ...


class DataPosition:
    """A data iterator's position, its ``state()`` (the checkpoint's ``data`` section): the seed of its
    random stream and how many elements it has handed out; ``data_position`` reads one back."""

    def state(self: _Positioned) -> dict[str, int]:
        """Where this iterator is: enough to resume it exactly (its ``restore``)."""
        return {"seed_entropy": self.seed_entropy, "elements_produced": self.elements_produced}


def data_position(state: Mapping[str, Any]) -> tuple[int, int]:
    """``(seed_entropy, elements_produced)`` of a data iterator's ``state()``, the ``data`` section:
    the seed of its random stream and how many elements it handed out."""
    try:
        seed_entropy = int(state["seed_entropy"])
        elements_produced = int(state["elements_produced"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"not a dataset iterator state: {state!r}") from exc
    if elements_produced < 0:
        raise InvalidInputError(f"not a dataset iterator state (negative position): {state!r}")
    return seed_entropy, elements_produced
