"""The typed description of one training run, whatever file it was read from.

A Model Zoo params file (flat or trainer layout) or a Hugging Face ``config.json`` with options from
the command line becomes one :class:`RunDescription`. The spec's checks (:mod:`.checks`), the LR
schedule run through the engine (:mod:`.schedule`) and the performance model (:mod:`.performance`)
read this description, never the raw document, so the three readers need to agree on one meaning
of every setting. Each setting keeps where it came from (a :class:`~csconform.findings.finding.Location`):
the dotted key path and the line in the file, or the command-line option, so that a finding can point at it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from csconform.arguments import integer_problem
from csconform.findings.finding import Location
from csconform.spec.releases import Release

T = TypeVar("T")
LAYOUTS = ("flat", "trainer", "hf")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """A value and where it was given."""

    value: T
    origin: Location


@dataclass(frozen=True)
class KeyUse:
    """A key present in the file: its dotted path, line, and the section it belongs to."""

    path: str
    line: int | None
    section: str
    name: str


@dataclass(frozen=True)
class SchedulerConfig:
    """One LR scheduler as configured: its package name and arguments (engine spellings).

    ``name`` is the vendor's class name (``CosineDecayLR``); ``written`` is what the file says
    (``CosineDecay``). Arguments use the package's names (``total_iters``, ``initial_learning_rate``);
    the readers translate the 1.x spellings (``steps``/``decay_steps``, ``values``/``boundaries``).
    A sequential or chained scheduler holds its phases in ``children``.
    """

    name: Setting[str]
    written: str
    arguments: Mapping[str, Setting[Any]]
    children: tuple[SchedulerConfig, ...] = ()
    origin: Location = field(default_factory=lambda: Location("(none)"))


@dataclass(frozen=True)
class ModelSection:
    """The model: a Model Zoo ``model:`` section with its family, or a Hugging Face config."""

    fields: Setting[Mapping[str, Any]]
    family: Setting[str] | None
    kind: str  # "zoo" (a Model Zoo model section) or "hf" (a Hugging Face config)
    seq_len: Setting[int] | None = None
    """The input's sequence length (an encoder-decoder's source length)."""
    target_len: Setting[int] | None = None
    """An encoder-decoder's target length (the input's ``tgt_max_sequence_length``)."""
    compute_eval_metrics: Setting[Any] | None = None
    data_processors: tuple[str, ...] = ()
    """The data processors the input sections name (how a flat file's model is recognised)."""
    vocab_size: Setting[Any] | None = None
    vocab_file: Setting[Any] | None = None
    """``train_input``'s vocabulary: the 1.x TensorFlow BERT models read their vocabulary size there
    (``vocab_size``, else the lines of ``vocab_file``), not in the model section."""


@dataclass(frozen=True)
class Batch:
    train: Setting[Any] | None = None
    eval: Setting[Any] | None = None
    micro_batch: Setting[Any] | None = None
    num_csx: Setting[Any] | None = None
    drop_last: Setting[Any] | None = None


@dataclass(frozen=True)
class Precision:
    mixed_precision: Setting[Any] | None = None
    fp16_type: Setting[Any] | None = None
    use_bfloat16: Setting[Any] | None = None
    precision_opt_level: Setting[Any] | None = None


@dataclass(frozen=True)
class LossScaling:
    """Loss scaling (the GradScaler's arguments) and gradient clipping."""

    factor: Setting[Any] | None = None
    initial_scale: Setting[Any] | None = None
    steps_per_increase: Setting[Any] | None = None
    min_scale: Setting[Any] | None = None
    max_scale: Setting[Any] | None = None
    overflow_tolerance: Setting[Any] | None = None
    max_gradient_norm: Setting[Any] | None = None
    max_gradient_value: Setting[Any] | None = None


@dataclass(frozen=True)
class OptimizerConfig:
    name: Setting[Any]
    arguments: Mapping[str, Setting[Any]]
    origin: Location
    lr_adjustment: Setting[Any] | None = None
    """``adjust_learning_rate``: learning-rate factors per group of layers (muP), not an optimizer argument."""


@dataclass(frozen=True)
class Loop:
    """How long the run is and what it does besides training."""

    max_steps: Setting[Any] | None = None
    num_steps: Setting[Any] | None = None
    num_epochs: Setting[Any] | None = None
    eval_steps: Setting[Any] | None = None
    eval_frequency: Setting[Any] | None = None
    checkpoint_steps: Setting[Any] | None = None
    log_steps: Setting[Any] | None = None
    mode: Setting[Any] | None = None
    execution_strategy: Setting[Any] | None = None
    has_eval_input: bool = False


@dataclass(frozen=True)
class RunDescription:
    """One training run: model, batch, precision, optimizer, schedule, loss scaling, loop."""

    file: str
    layout: str
    release: Release
    model: ModelSection | None
    batch: Batch
    precision: Precision
    loss_scaling: LossScaling
    optimizer: OptimizerConfig | None
    schedule: SchedulerConfig | None
    loop: Loop
    keys: tuple[KeyUse, ...] = ()
    duplicate_keys: tuple[KeyUse, ...] = ()
    text_numbers: tuple[KeyUse, ...] = ()
    """Values written as numbers that YAML 1.1 reads as text (``1e-5``); the description holds the number."""
    estimator_settings: Mapping[str, Setting[Any]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    framework: str = "pytorch"
    """``tensorflow`` for the 1.x Model Zoo's TensorFlow params files (a ``tf`` folder), read by the
    CerebrasEstimator: the PyTorch optimizer, scheduler and loop checks do not apply to them."""

    @property
    def steps(self) -> int | None:
        """Training steps of the run: ``num_steps`` if given, else ``max_steps`` (a positive integer, else None)."""
        for setting in (self.loop.num_steps, self.loop.max_steps):
            value = None if setting is None else setting.value
            if value is not None and integer_problem("steps", value, minimum=1) is None:
                return int(value)
        return None

    @property
    def asked_mode(self) -> str | None:
        """The execution mode a 1.x ``runconfig.execution_strategy`` asks for (``weight_streaming``, or
        ``pipelined`` for ``pipeline``); None when the file asks for none."""
        strategy = self.loop.execution_strategy
        written = "" if strategy is None else str(strategy.value)
        if written == "weight_streaming":
            return "weight_streaming"
        return "pipelined" if written.startswith("pipeline") else None

    @property
    def systems(self) -> int:
        """Systems of the run (``num_csx``; 1 when not given or not a positive integer)."""
        value = self.batch.num_csx.value if self.batch.num_csx is not None else 1
        return int(value) if integer_problem("num_csx", value, minimum=1) is None else 1
