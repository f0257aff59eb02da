"""A described model: its layers, and the published figures the unit tests check them against."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from csconform.errors import ModelConfigError
from csconform.perf.models.layer import Layer, active_params, model_flops_per_sample, total_params

DEFAULT_BATCH = 256


@dataclass(frozen=True)
class ModelSpec:
    """A described model: its layers plus the published figures we check them against.

    ``config`` is the configuration it was built from (``None`` for a hand-written layer list) and
    ``rebuild`` builds the same model at another sequence length; ``notes`` say how the reader read
    the config where a choice was made (which field governs, which heads are counted, how a mixture
    of experts is counted).
    """

    name: str
    layers: tuple[Layer, ...]
    seq_len: int | None
    default_batch: int
    published_params: float
    source: str
    family: str = "described"
    max_seq_len: int | None = None
    notes: tuple[str, ...] = ()
    config: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    rebuild: Callable[[int], ModelSpec] | None = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> int:
        """Every trainable parameter (every expert of a mixture of experts)."""
        return total_params(self.layers)

    @property
    def active_params(self) -> int:
        """Parameters one token goes through (the same as ``params`` unless experts are routed)."""
        return active_params(self.layers)

    @property
    def flops_per_sample(self) -> float:
        """Forward + backward FLOPs for one sample (one sequence or one image)."""
        return model_flops_per_sample(self.layers)

    def at_seq_len(self, seq_len: int) -> ModelSpec:
        """The same model at another sequence length (models built from a config only)."""
        if self.rebuild is None:
            raise ModelConfigError("seq_len applies to models built from a config; build the layers at that length")
        return self.rebuild(seq_len)
