"""The step, its iterations, and PyTorch's graph capture of it (runs in the child process).

The step is the first callable the script compiles (``torch.compile``, as a function, a decorator
or ``Module.compile()``) or traces (``cstorch.trace``) that it calls, or the function named with
``--step``. Each call of it from outside itself is one iteration: :class:`Iterations` numbers them,
records what the step was given, and ends the run when the next iteration would exceed the steps
asked for.

Every callable the script compiles is compiled by TorchDynamo, as the script asked, but with
:class:`GraphRecorder` as the backend (the graph runs as captured, eagerly: no Inductor build) and
``dynamic=False`` (every shape is a constant, as on the system), and every callable it traces with
``cstorch.trace`` is compiled the same way inside the vendor's trace. The backend reports each graph
PyTorch captured: TorchDynamo's compile id (which frame, which recompile), the reason the graph
ended (``compile_subgraph_reason``: a graph break or the return), the user lines, and for a
recompile the guards that failed (``torch._dynamo.utils.guard_failures``); :func:`watch_graph_breaks`
records every graph break TorchDynamo reports, with its user line. ``fullgraph``, ``mode``,
``options`` and the script's own backend are set aside: a graph break is observed, not raised.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from types import CodeType
from typing import Any

import torch

from csconform.usercode.runtime import frames
from csconform.usercode.runtime.events import Compile, EventLog, GraphBreak, StepCall, Where

MAX_TENSORS = 32
"""The tensors described per step call (the first ones, in argument order)."""
COMPILE_ID_PREFIX = re.compile(r"^\d+/\d+: ")
"""torch 2.13 prefixes a guard failure with the compile id of the graph it belonged to."""


class Iterations:
    """Counts the step's calls; ``stop(status)`` ends the run (the child's :func:`~.child.finish`)."""

    def __init__(self, log: EventLog, steps: int, stop: Callable[[str], None]) -> None:
        self.log, self.steps, self.stop = log, steps, stop
        self.count = 0
        self.step: object | None = None
        self._inside = 0
        self.compiled_region: Callable[[], AbstractContextManager[Any]] = nullcontext
        """The context every call of a compiled callable runs in (:meth:`.calls.LearningRates.plain_groups`)."""

    def claim(self, owner: object) -> None:
        """``owner`` is the step (the function named with ``--step``), whatever is called first."""
        self.step = owner

    def enter(self, owner: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """A call of a compiled or traced callable begins; True when it is a new iteration."""
        if self.step is None:
            self.step = owner
        if owner is not self.step or self._inside:
            return False
        if self.count >= self.steps:
            self.stop("budget")
        self.count += 1
        self._inside += 1
        self.log.write(StepCall(self.count, frames.caller(), tuple(_describe_tensors((args, kwargs)))))
        return True

    def leave(self, began: bool) -> None:
        if began:
            self._inside -= 1

    def wrap(self, owner_call: Callable[..., Any], around: Callable[[], Any] | None = None) -> Callable[..., Any]:
        """A function that calls ``owner_call`` as one iteration (``around``: a context for each call)."""

        @functools.wraps(owner_call)
        def step(*args: Any, **kwargs: Any) -> Any:
            began = self.enter(step, args, kwargs)
            try:
                with self.compiled_region(), around() if around is not None else nullcontext():
                    return owner_call(*args, **kwargs)
            finally:
                self.leave(began)

        return step

    def watch_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """A compiled module's calls as iterations, through its forward hooks (it stays the module)."""
        calls: list[tuple[bool, ExitStack]] = []

        def before(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            began = self.enter(module, args, kwargs)
            region = ExitStack()
            region.enter_context(self.compiled_region())
            calls.append((began, region))

        def after(_module: Any, _args: Any, _kwargs: Any, _output: Any) -> None:
            if calls:
                began, region = calls.pop()
                region.close()
                self.leave(began)

        module.register_forward_pre_hook(before, with_kwargs=True)
        module.register_forward_hook(after, with_kwargs=True, always_call=True)
        return module


def _tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in a value (a tensor, or lists, tuples and dicts of them), at most MAX_TENSORS."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 4 and isinstance(value, list | tuple | dict):
        items = value.values() if isinstance(value, dict) else value
        for item in list(items)[:MAX_TENSORS]:
            yield from _tensors(item, depth + 1)


def _describe_tensors(value: Any) -> Iterator[str]:
    for tensor in _tensors(value):
        yield f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"


def leading_sizes(batch: Any) -> tuple[int, ...]:
    """The first dimension of every tensor in a batch (0 for a scalar)."""
    return tuple(int(tensor.shape[0]) if tensor.dim() else 0 for tensor in _tensors(batch))


class GraphRecorder:
    """The TorchDynamo backend that reports every graph PyTorch captured (see the module docstring)."""

    def __init__(self, log: EventLog, iterations: Iterations) -> None:
        self.log, self.iterations = log, iterations

    def __call__(self, graph_module: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        try:
            self.log.write(self._compile_event(graph_module))
        except Exception as exc:  # an observer must never stop the user's step
            self.log.write(
                Compile(self.iterations.count, -1, -1, "?", "?", False, f"not recorded: {exc!r}", None, None)
            )
        return graph_module.forward

    def _compile_event(self, graph_module: torch.fx.GraphModule) -> Compile:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
        frame_id = getattr(compile_id, "frame_id", None)
        recompile = getattr(compile_id, "frame_compile_id", None)
        reason = getattr(graph_module, "compile_subgraph_reason", None)
        stack = list(getattr(reason, "user_stack", None) or [])
        top = stack[0] if stack else None
        user_frames = [entry for entry in stack if frames.is_user_file(entry.filename)]
        break_at = Where(_real(user_frames[-1].filename), int(user_frames[-1].lineno or 0)) if user_frames else None
        return Compile(
            iteration=self.iterations.count,
            frame=frame_id if isinstance(frame_id, int) else -1,
            recompile=recompile if isinstance(recompile, int) else -1,
            function=top.name if top is not None else "?",
            file=_real(top.filename) if top is not None else "?",
            graph_break=bool(getattr(reason, "graph_break", False)),
            reason=str(getattr(reason, "reason", "")),
            break_at=break_at,
            first_op_at=_first_user_op(graph_module),
            guard_failures=_guard_failures(top) if recompile else (),
        )


def _real(filename: str) -> str:
    return os.path.realpath(filename)


def _first_user_op(graph_module: torch.fx.GraphModule) -> Where | None:
    for node in graph_module.graph.nodes:
        if node.op.startswith("call"):
            lines = frames.user_lines_of_stack_trace(node.meta.get("stack_trace"))
            if lines:
                return lines[-1]
    return None


def _guard_failures(top: Any) -> tuple[str, ...]:
    """The latest failed guards of the frame being recompiled, in PyTorch's words."""
    try:
        from torch._dynamo.utils import guard_failures
    except ImportError:
        return ()
    if top is None:
        return ()
    for code, failures in list(guard_failures.items()):
        if code.co_name == top.name and _real(code.co_filename) == _real(top.filename) and failures:
            return tuple(_guard_words(str(failure)) for failure in failures[-1:])
    return ()


def _guard_words(failure: str) -> str:
    """A failed guard's first line, without torch 2.13's compile id and the source comment after it."""
    first = COMPILE_ID_PREFIX.sub("", failure.strip()).splitlines()[0] if failure.strip() else ""
    return first.split("  #", 1)[0].strip()


def watch_graph_breaks(log: EventLog, iterations: Iterations) -> None:
    """Record every graph break TorchDynamo reports, with its user line and reason: torch 2.13 through
    its ``log_graph_break`` method, torch 2.4 through its ``graph_breaks`` log (the record carries
    the Unsupported exception, with ``real_stack`` and ``msg``)."""
    from torch._dynamo import symbolic_convert

    def record(reason: Any, stack: Any) -> None:
        user = [entry for entry in stack or () if frames.is_user_file(entry.filename)]
        at = Where(_real(user[-1].filename), int(user[-1].lineno or 0)) if user else None
        log.write(GraphBreak(iterations.count, at, str(reason)))

    translator = getattr(symbolic_convert, "InstructionTranslatorBase", None)
    log_graph_break = getattr(translator, "log_graph_break", None)
    if log_graph_break is not None:

        @functools.wraps(log_graph_break)
        def logged(self: Any, *args: Any, **kwargs: Any) -> Any:
            with contextlib.suppress(Exception):  # an observer must never stop the capture
                problem = kwargs.get("exc", args[2] if len(args) > 2 else None)
                reason = kwargs.get("reason", args[1] if len(args) > 1 else "")
                record(reason, getattr(problem, "real_stack", None))
            return log_graph_break(self, *args, **kwargs)

        replace(translator, "log_graph_break", logged)
        return

    class Breaks(logging.Handler):
        def emit(self, entry: logging.LogRecord) -> None:
            problem = entry.exc_info[1] if entry.exc_info else None
            if problem is not None and hasattr(problem, "real_stack"):
                record(getattr(problem, "msg", str(problem)), problem.real_stack)

    breaks_log = torch._logging.getArtifactLogger(symbolic_convert.__name__, "graph_breaks")
    breaks_log.addHandler(Breaks())
    breaks_log.setLevel(logging.DEBUG)


def rewritten_by_capture(code: CodeType | None) -> bool:
    """Whether TorchDynamo rewrote this code object (the frame of a compiled function or of the rest
    of one after a graph break)."""
    try:
        from torch._dynamo.utils import orig_code_map
    except ImportError:
        return False
    return code is not None and orig_code_map.get(code) is not None


def replace(owner: Any, name: str, value: Any) -> None:
    """Put an observer in place of a library's function, method or class attribute (in the child only)."""
    setattr(owner, name, value)


def skip_in_capture(module_name: str) -> None:
    """TorchDynamo does not trace into ``module_name`` (csconform's observers, the vendor's package):
    a call there is run as it is, between two graphs."""
    try:
        from torch._dynamo import trace_rules
    except ImportError:
        return
    add = getattr(trace_rules, "add", None)
    if add is not None:
        add(module_name)


def compile_for_observation(fn: Any, record: GraphRecorder, compile_fn: Callable[..., Any]) -> Any:
    """``fn`` compiled by TorchDynamo with the recording backend and static shapes."""
    return compile_fn(fn, backend=record, dynamic=False)


def install_compile(record: GraphRecorder, iterations: Iterations) -> Callable[..., Any]:
    """Replace ``torch.compile`` (see the module docstring); returns the original."""
    original = torch.compile

    def compile(model: Any = None, **options: Any) -> Any:  # noqa: A001 - torch's name
        if model is None:
            return lambda fn: compile(fn, **options)
        if options.get("disable"):
            return original(model, disable=True)
        compiled = compile_for_observation(model, record, original)
        if isinstance(compiled, torch.nn.Module):
            return iterations.watch_module(compiled)
        return iterations.wrap(compiled)

    functools.update_wrapper(compile, original)
    replace(torch, "compile", compile)
    return original
