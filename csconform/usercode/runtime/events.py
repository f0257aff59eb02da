"""What the run of a user's script observed, one record per event, passed from the child process to
the judge as JSON lines.

The child (:mod:`.child`) appends one line per event and flushes it at once, so the events up to a
crash, a hang or a kill survive; the parent (:mod:`.process`) reads them back, skipping a last line
cut short. ``iteration`` is the number of the step call under way (1 for the first; 0 before the
first step was called). A place in the user's code is a :class:`Where`: the file as the child saw
it (absolute) and a 1-based line.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any


@dataclass(frozen=True)
class Where:
    file: str
    line: int


@dataclass(frozen=True)
class StepCall:
    """The step was called: where from, and the shapes and dtypes of the tensors it was given."""

    iteration: int
    at: Where | None
    tensors: tuple[str, ...]
    """One ``dtype[d0, d1, ...]`` per tensor among the arguments, in argument order."""


@dataclass(frozen=True)
class Compile:
    """PyTorch's graph capture (TorchDynamo) compiled a graph: a frame's first compile or a recompile,
    the reason the graph ended (a graph break or the frame's return), and where in user code."""

    iteration: int
    frame: int
    """TorchDynamo's frame id: one per code object it compiled."""
    recompile: int
    """TorchDynamo's compile count for that frame: 0 for the first graph, n for the n-th recompile."""
    function: str
    """The compiled frame's function (a resume function after a graph break: ``torch_dynamo_resume_in_f_at_21``)."""
    file: str
    graph_break: bool
    reason: str
    """PyTorch's own words for why the graph ended (``generic_jump TensorVariable()``, ``return_value``)."""
    break_at: Where | None
    """The user line the graph ended at (the innermost user frame of the capture's stack)."""
    first_op_at: Where | None
    """The user line of the graph's first operation."""
    guard_failures: tuple[str, ...] = ()
    """For a recompile: the guards of the previous graph that failed, in PyTorch's words."""


@dataclass(frozen=True)
class GraphBreak:
    """TorchDynamo broke the graph at a user line, in its own words (logged even when the graph before
    the break is empty, which then never reaches the backend)."""

    iteration: int
    at: Where | None
    reason: str


@dataclass(frozen=True)
class LrWrite:
    """``param_group["lr"]`` was assigned: where (the user line), by whom, the old and new value."""

    iteration: int
    at: Where | None
    writer: str
    """``user code``, or the library function that wrote it (``torch.optim.lr_scheduler.StepLR.step``)."""
    old: str
    new: str


@dataclass(frozen=True)
class AmpCall:
    """A call in the mixed-precision sequence: a GradScaler's scale, unscale_, step or update, a
    backward pass, or a gradient clipping."""

    iteration: int
    at: Where | None
    call: str
    """``scale``, ``unscale_``, ``step``, ``update``, ``backward`` or ``clip``."""
    scaler: int = 0
    """Which GradScaler (0 for backward and clip)."""
    optimizer: int = 0
    """Which optimizer (unscale_ and step)."""
    api: str = ""
    """``torch.amp.GradScaler`` or ``cerebras.pytorch.amp.GradScaler``; the clipping function's name."""
    captured: bool = False
    """Made from a frame TorchDynamo rewrote (a compiled step, at a graph break), whose line torch 2.4
    gives as the line before the call: the graph break's own line is the call's."""


@dataclass(frozen=True)
class LoaderBatch:
    """A DataLoader yielded a batch: which loader (where the user made it) and its leading sizes."""

    iteration: int
    loader: int
    made_at: Where | None
    sizes: tuple[int, ...]
    """The first dimension of each tensor in the batch."""


@dataclass(frozen=True)
class RunEnd:
    """How the run ended: ``budget`` (the steps asked for ran), ``finished`` (the script ran to its end),
    ``exit`` (it called sys.exit), ``raised`` (an exception), ``timeout`` (the time limit ran out),
    ``no_torch`` (PyTorch is not installed for the interpreter that runs the script)."""

    status: str
    iterations: int
    at: Where | None = None
    detail: str = ""
    """The exception (``RuntimeError: ...``) or the exit status."""


Event = StepCall | Compile | GraphBreak | LrWrite | AmpCall | LoaderBatch | RunEnd
KINDS: dict[str, type[Any]] = {
    kind.__name__: kind for kind in (StepCall, Compile, GraphBreak, LrWrite, AmpCall, LoaderBatch, RunEnd)
}


@dataclass
class EventLog:
    """The child's writer: one JSON line per event, flushed at once (the time limit's thread writes too)."""

    stream: IO[str]
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, event: Event) -> None:
        line = json.dumps({"kind": type(event).__name__, **asdict(event)}) + "\n"
        with self._lock:
            self.stream.write(line)
            self.stream.flush()


WHERE_FIELDS = ("at", "break_at", "first_op_at", "made_at")


def _build(kind: type[Any], data: dict[str, Any]) -> Any:
    values: dict[str, Any] = {}
    for item in fields(kind):
        if item.name not in data:
            continue
        value = data[item.name]
        if item.name in WHERE_FIELDS:
            value = Where(str(value["file"]), int(value["line"])) if isinstance(value, dict) else None
        elif isinstance(value, list):
            value = tuple(value)
        values[item.name] = value
    return kind(**values)


def read_events(path: Path) -> list[Event]:
    """The events in the file; a line the child did not finish (killed mid-write) is skipped."""
    events: list[Event] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            data = json.loads(line)
            events.append(_build(KINDS[data.pop("kind")], data))
        except (ValueError, KeyError, TypeError):
            continue
    return events
