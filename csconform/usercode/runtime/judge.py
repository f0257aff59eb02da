"""From what the run observed to findings on the user's lines (rules CODE-101 to CODE-106).

Each rule reads the events of one kind (:mod:`.events`): the graphs PyTorch compiled after the first
iteration (CODE-101), the graph breaks on a tensor's value (CODE-103, from the breaks TorchDynamo
logged and those its graphs ended at), the tensors given to the step and the batches DataLoaders
yielded (CODE-102), the learning-rate writes (CODE-104), the mixed-precision calls in order
(CODE-105), and how the run ended (CODE-106). One finding per rule and line: the first iteration
it was seen at is in the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from csconform.findings.collect import Findings
from csconform.findings.finding import Location
from csconform.spec.model import Spec
from csconform.spec.releases import Release
from csconform.usercode.runtime import frames
from csconform.usercode.runtime.events import (
    AmpCall,
    Compile,
    Event,
    GraphBreak,
    LoaderBatch,
    LrWrite,
    RunEnd,
    StepCall,
    Where,
)

RESUME_FUNCTION = re.compile(r"resume_in_\w+_at_(?P<line>\d+)$")
"""TorchDynamo's name for the rest of a function after a graph break at line N (torch 2.4 and 2.13)."""
VALUE_READS = (
    (("generic_jump",), "a Python branch or loop on a tensor's value"),
    (("data-dependent",), "a Python branch or loop on a tensor's value"),
    (("tensor.item",), "a tensor's value read as a Python number"),
    (("item()",), "a tensor's value read as a Python number"),
    (("builtin: bool",), "a tensor's value read as a Python bool"),
    (("builtin: float",), "a tensor's value read as a Python number"),
    (("builtin: int",), "a tensor's value read as a Python number"),
    (("tolist",), "a tensor's values read as a Python list"),
    (("print", "tensor"), "a tensor printed"),
    (("dynamic shape operator",), "an operation whose output shape depends on tensor values"),
)
"""PyTorch's words for a graph break that depends on a tensor's value (all of them in the reason's
first line or its ``Explanation:`` line, lower case: torch 2.4 and 2.13 word them differently), and ours."""
ONE_BATCH_SHAPE = "; the system compiles the step for one batch shape"
SHAPE_GUARDS = ("size mismatch", "rank mismatch", "stride mismatch", "dtype mismatch")
STOPPED = {
    "raised": "the script raised {detail}",
    "exit": "the script exited ({detail})",
    "timeout": "the time limit ({detail}) ran out here",
    "killed": "the script's process ended ({detail})",
}
"""How a run that had begun its steps stopped early (CODE-106), by RunEnd.status."""


def value_read(reason: str) -> str | None:
    """What a graph break's reason says was read, when it depends on a tensor's value."""
    lines = [line.strip() for line in reason.strip().splitlines()]
    said = " ".join(lines[:1] + [line for line in lines if line.startswith("Explanation:")]).lower()
    return next((ours for words, ours in VALUE_READS if all(word in said for word in words)), None)


@dataclass
class Verdicts:
    """The findings, one :class:`Findings` per file (``shown`` maps a file to the path reported)."""

    spec: Spec
    release: Release
    shown: Callable[[str], str]
    files: dict[str, Findings] = field(default_factory=dict)
    seen: set[tuple[str, str, int | None]] = field(default_factory=set)

    def add(self, rule: str, at: Where | None, message: str, file: str, advisory: bool = False) -> None:
        path = self.shown(at.file if at is not None else file)
        line = at.line if at is not None else None
        if (rule, path, line) in self.seen:
            return
        self.seen.add((rule, path, line))
        findings = self.files.setdefault(path, Findings(self.spec, self.release, path))
        (findings.warn if advisory else findings.refuse)(rule, Location(line=line), message)

    def has(self, rule: str, at: Where | None) -> bool:
        return at is not None and (rule, self.shown(at.file), at.line) in self.seen


def judge(events: list[Event], script: str, spec: Spec, release: Release, shown: Callable[[str], str]) -> Verdicts:
    """The findings of one run of ``script`` (its absolute path, as the child saw it)."""
    verdicts = Verdicts(spec, release, shown)
    verdicts.files[shown(script)] = Findings(spec, release, shown(script))
    of = _by_kind(events)
    shape_changes = batch_shapes(verdicts, of(StepCall), of(LoaderBatch), shape_recompiles(of(Compile)), script)
    breaks = graph_breaks(of(Compile), of(GraphBreak))
    graph_changes(verdicts, of(Compile), breaks, shape_changes, script)
    value_reads(verdicts, breaks, script)
    learning_rates(verdicts, of(LrWrite), script)
    ends = of(RunEnd)
    calls = [_at_graph_break(call, breaks) for call in of(AmpCall)]
    grad_scaler_order(verdicts, calls, ends[-1] if ends else None, script)
    if ends:
        stopped_early(verdicts, ends[-1], script)
    return verdicts


def _by_kind(events: list[Event]) -> Callable[[type], list[Any]]:
    return lambda kind: [event for event in events if isinstance(event, kind)]


def graph_breaks(compiles: list[Compile], logged: list[GraphBreak]) -> list[GraphBreak]:
    """Every graph break at a user line: those its graphs ended at (their reasons are the shorter),
    then those TorchDynamo logged (a break after an empty graph never reaches the backend)."""
    ended = [GraphBreak(graph.iteration, graph.break_at, graph.reason) for graph in compiles if graph.graph_break]
    return [graph_break for graph_break in [*ended, *logged] if graph_break.at is not None]


def _concerns_user(graph: Compile) -> bool:
    return graph.break_at is not None or graph.first_op_at is not None or frames.is_user_file(graph.file)


def graph_changes(
    verdicts: Verdicts, compiles: list[Compile], breaks: list[GraphBreak], shape_changes: set[int], script: str
) -> None:
    """CODE-101: a graph PyTorch captured after the first iteration."""
    for graph in compiles:
        if graph.iteration < 2 or not _concerns_user(graph):
            continue
        if graph.recompile > 0:
            failed = "; ".join(graph.guard_failures) or "a guard of the previous graph failed"
            if graph.iteration in shape_changes and any(word in failed for word in SHAPE_GUARDS):
                continue  # the batch changed shape: CODE-102 says so, with PyTorch's words
            at = graph.first_op_at or graph.break_at
            message = (
                f"the step's graph changed at iteration {graph.iteration}: PyTorch recompiled {graph.function} "
                f"because {failed}; the system compiles the step once"
            )
        else:
            branch = _branch_before(graph, compiles, breaks)
            if branch is not None:
                at, reason = branch
                message = (
                    f"the step's graph changed at iteration {graph.iteration}: after the graph break here "
                    f"({_pytorch_words(reason)}) PyTorch captured a graph it had not run before, so a Python "
                    f"branch took another path; the system compiles the step once"
                )
            else:
                at = graph.first_op_at or graph.break_at
                message = (
                    f"the step's graph changed at iteration {graph.iteration}: PyTorch captured a graph of "
                    f"{graph.function} it had not run before; the system compiles the step once"
                )
        verdicts.add("CODE-101", at, message, script)


def _branch_before(graph: Compile, compiles: list[Compile], breaks: list[GraphBreak]) -> tuple[Where, str] | None:
    """The graph break a new graph continues from, and PyTorch's reason for it: the break TorchDynamo
    names the graph's function after (``..._at_LINE``), else the nearest break on a tensor's value
    before the graph's first operation in the same function."""
    resumed = RESUME_FUNCTION.search(graph.function)
    if resumed and frames.is_user_file(graph.file):
        at = Where(graph.file, int(resumed["line"]))
        return at, next((earlier.reason for earlier in breaks if earlier.at == at), "")
    first_op = graph.first_op_at
    before = [
        (earlier.break_at, earlier.reason)
        for earlier in compiles
        if earlier.graph_break
        and earlier.function == graph.function
        and value_read(earlier.reason)
        and earlier.break_at is not None
        and first_op is not None
        and earlier.break_at.file == first_op.file
        and earlier.break_at.line < first_op.line
    ]
    return max(before, key=lambda pair: pair[0].line, default=None)


def value_reads(verdicts: Verdicts, breaks: list[GraphBreak], script: str) -> None:
    """CODE-103: a graph break at a user line, for a reason that depends on a tensor's value."""
    for graph_break in breaks:
        read = value_read(graph_break.reason)
        if read is None or verdicts.has("CODE-101", graph_break.at):
            continue
        message = (
            f"PyTorch's graph capture of the step breaks here: {read} ({_pytorch_words(graph_break.reason)}); the "
            f"graph then depends on the data"
        )
        verdicts.add("CODE-103", graph_break.at, message, script, advisory=True)


def shape_recompiles(compiles: list[Compile]) -> dict[int, str]:
    """The first guard failure about a tensor's shape or dtype that made PyTorch recompile, by iteration."""
    found: dict[int, str] = {}
    for graph in compiles:
        for failure in graph.guard_failures if graph.recompile > 0 else ():
            if any(word in failure for word in SHAPE_GUARDS):
                found.setdefault(graph.iteration, failure)
    return found


def batch_shapes(
    verdicts: Verdicts, calls: list[StepCall], batches: list[LoaderBatch], recompiled: dict[int, str], script: str
) -> set[int]:
    """CODE-102: the step's tensors or a DataLoader's batches change shape; returns the iterations.
    ``recompiled``: PyTorch's words for the recompilation the change caused, by iteration."""

    def pytorch_said(iteration: int) -> str:
        return f"; PyTorch recompiled the step: {recompiled[iteration]}" if iteration in recompiled else ""

    changed: set[int] = set()
    by_loader: dict[int, list[LoaderBatch]] = {}
    for batch in batches:
        by_loader.setdefault(batch.loader, []).append(batch)
    for loader_batches in by_loader.values():
        first = loader_batches[0]
        for index, batch in enumerate(loader_batches[1:], start=2):
            if batch.sizes != first.sizes:
                iteration = batch.iteration + 1
                changed.add(iteration)
                said = (
                    f"this DataLoader's batch {index} has {_sizes(batch.sizes)} where batch 1 had {_sizes(first.sizes)}"
                )
                message = f"{said} (the step's iteration {iteration}){pytorch_said(iteration)}{ONE_BATCH_SHAPE}"
                verdicts.add("CODE-102", first.made_at, message, script)
                break
    for call in calls[1:]:
        if call.tensors != calls[0].tensors:
            if call.iteration not in changed:
                changed.add(call.iteration)
                said = f"the step was given {_tensors(call.tensors)} at iteration {call.iteration}"
                message = f"{said} after {_tensors(calls[0].tensors)} at iteration 1{pytorch_said(call.iteration)}"
                verdicts.add("CODE-102", call.at, message + ONE_BATCH_SHAPE, script)
            break
    return changed


def learning_rates(verdicts: Verdicts, writes: list[LrWrite], script: str) -> None:
    """CODE-104: param_group["lr"] assigned during the run (not by the vendor's schedulers)."""
    for write in writes:
        by = "" if write.writer == "user code" else f" by {write.writer}"
        message = (
            f"param_group['lr'] was written at iteration {write.iteration}{by} ({write.old} -> {write.new}); the "
            f"system takes the learning rate from a schedule of the global step, not from the param groups"
        )
        verdicts.add("CODE-104", write.at, message, script)


def _at_graph_break(call: AmpCall, breaks: list[GraphBreak]) -> AmpCall:
    """A call a compiled frame made at a graph break, on the line PyTorch recorded for that break (the
    nearest break at or after the frame's line whose reason names the call): torch 2.4 gives such a
    frame the line before the call."""
    if not call.captured or call.at is None:
        return call
    name = {"clip": call.api, "backward": "backward"}.get(call.call, f"GradScaler.{call.call}")
    lines = [
        graph_break.at.line
        for graph_break in breaks
        if graph_break.at is not None
        and graph_break.at.file == call.at.file
        and graph_break.at.line >= call.at.line
        and name in graph_break.reason
    ]
    return replace(call, at=Where(call.at.file, min(lines))) if lines else call


@dataclass
class _Scaler:
    """One GradScaler's state since its last update()."""

    scaled: bool = False
    grads_scaled: bool = False
    """A backward ran after scale() and no unscale_() since: the gradients are still scaled."""
    stepped: dict[int, AmpCall] = field(default_factory=dict)
    unscaled: set[int] = field(default_factory=set)


def grad_scaler_order(verdicts: Verdicts, calls: list[AmpCall], end: RunEnd | None, script: str) -> None:
    """CODE-105: the order scale, backward, unscale_, clip, step, update (see the rule)."""
    scalers: dict[int, _Scaler] = {}
    unscaled_backward: AmpCall | None = None

    def out_of_order(call: AmpCall, what: str) -> None:
        verdicts.add(
            "CODE-105",
            call.at,
            f"{what} (iteration {call.iteration}); the documented order is "
            "scale, backward, unscale_, clipping, step, update",
            script,
        )

    for call in calls:
        if call.call == "backward":
            open_scalers = [state for state in scalers.values() if state.scaled]
            for state in open_scalers:
                state.grads_scaled = True
            if not open_scalers:
                unscaled_backward = call
            continue
        if call.call == "clip":
            if any(state.grads_scaled for state in scalers.values()):
                out_of_order(
                    call, f"{call.api}() clips gradients that are still scaled: unscale_() was not called first"
                )
            continue
        state = scalers.setdefault(call.scaler, _Scaler())
        if call.call == "scale":
            if state.stepped:  # a new iteration began: the last one's update() is missing
                for step in state.stepped.values():
                    out_of_order(step, "GradScaler.step() was not followed by update() before the next scale()")
                state = scalers[call.scaler] = _Scaler()
            if unscaled_backward is not None:
                out_of_order(unscaled_backward, "backward() ran before GradScaler.scale(): the loss was not scaled")
                unscaled_backward = None
            state.scaled = True
        elif call.call == "unscale_":
            if call.optimizer in state.stepped:
                out_of_order(call, "GradScaler.unscale_() came after step() for the same optimizer")
            state.unscaled.add(call.optimizer)
            state.grads_scaled = False
        elif call.call == "step":
            earlier = state.stepped.get(call.optimizer)
            if earlier is not None:
                out_of_order(earlier, "GradScaler.step() was not followed by update() before the next step()")
            state.stepped[call.optimizer] = call
        elif call.call == "update":
            if not state.stepped:
                out_of_order(call, "GradScaler.update() came without a step() since the last update()")
            scalers[call.scaler] = _Scaler()
            unscaled_backward = None
    if end is not None and end.status in ("budget", "finished"):
        for state in scalers.values():
            for step in state.stepped.values():
                out_of_order(step, "GradScaler.step() was not followed by update() before the run ended")


def stopped_early(verdicts: Verdicts, end: RunEnd, script: str) -> None:
    """CODE-106: the script stopped by itself after its first step (before it, :mod:`.process` refuses)."""
    if end.status not in STOPPED or end.iterations == 0:
        return
    message = (
        f"{STOPPED[end.status].format(detail=end.detail)} at iteration {end.iterations}; the findings cover the "
        f"iterations before"
    )
    verdicts.add("CODE-106", end.at, message, script, advisory=True)


def _pytorch_words(reason: str) -> str:
    """A graph break's reason as PyTorch gives it: its first line, and its explanation when it has one."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    if not lines:
        return "no reason given"
    explanation = next(
        (line.removeprefix("Explanation:").strip() for line in lines if line.startswith("Explanation:")), ""
    )
    return f"{lines[0]}: {explanation}" if explanation else lines[0]


def _sizes(sizes: Iterable[int]) -> str:
    values = list(sizes)
    if not values:
        return "no tensor"
    return f"{values[0]} samples" if len(set(values)) == 1 else f"first dimensions {values}"


def _tensors(tensors: tuple[str, ...]) -> str:
    return ", ".join(tensors) if tensors else "no tensor"
