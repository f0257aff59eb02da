"""The implementation module itself: its declaration and the choice of target system.

Limitations apply on the CS system only (estimator-limitations#Limitations of the
CerebrasEstimator); a CPU run supports the full framework. So every implementation runs checks on a
*target*: ``"cs"`` (the limitations are enforced) or ``"cpu"`` (they are lifted). ``reset()``
restores the implementation's defaults between checks.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class ImplementationModule(Protocol):
    """The module named by ``--engine``."""

    CAPABILITIES: frozenset[str]
    """The capabilities it offers (see :data:`csconform.interface.CAPABILITY_NAMES`)."""
    TARGETS: tuple[str, ...]
    """The targets it can run: ``"cs"``, ``"cpu"`` or both; the first is the default.

    Optionally also ``EMULATIONS: Mapping[str, str]``: capability -> what an adapter does around
    its package to run that capability off the real system (a native implementation has none); and
    ``IMPLEMENTATION: str``: what is under test and its version (``"cerebras.pytorch 2.10.0"``), which
    the conformance matrix records, so a published matrix says which release it describes.
    """

    def reset(self) -> None:
        """Restore the defaults (default target, float16 half dtype) and forget all state."""

    def set_target(self, name: str) -> None:
        """Run what follows on target ``name``."""

    def use_target(self, name: str) -> AbstractContextManager[str]:
        """A block on target ``name``; the previous target is restored afterwards."""

    def current_target(self) -> str:
        """The target checks currently run on."""
