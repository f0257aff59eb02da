"""Static graphs: the operations one training or eval step performs, recorded by running it once.

The CS system is programmed once per run with a compiled graph, so the graph of a step must not
change between iterations (pytorch-limitations#Static Graphs). The engine finds the graph by tracing: the
step function runs inside :func:`trace`, and every operation it performs reports itself with
:func:`record` (the engine's layers and losses do so; user code calling raw NumPy can report its
own operations the same way). The record keeps the operation name and the shapes and dtypes of its
inputs, which is exactly what a compiled program depends on: a different batch size, dtype,
operation, or a Python branch that takes another path all yield a different :class:`Graph`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from csconform.arguments import check_callable


@dataclass(frozen=True)
class OpRecord:
    """One operation as the compiler sees it: its name and its inputs' shapes and dtypes."""

    name: str
    input_shapes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]

    def describe(self) -> str:
        inputs = ", ".join(f"{d}{list(s)}" for s, d in zip(self.input_shapes, self.input_dtypes, strict=True))
        return f"{self.name}({inputs})"


@dataclass(frozen=True)
class Graph:
    """The ordered operations of one step. Two steps with equal graphs can share one program."""

    ops: tuple[OpRecord, ...] = field(default_factory=tuple)

    def fingerprint(self) -> str:
        """A short stable digest of the graph (sha256 over the op descriptions)."""
        text = "\n".join(op.describe() for op in self.ops)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def op_names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.ops)

    def first_difference(self, other: Graph) -> str | None:
        """Describe where ``other`` departs from this graph, or None when they are equal."""
        for index, (mine, theirs) in enumerate(zip(self.ops, other.ops, strict=False)):
            if mine != theirs:
                return f"operation {index}: compiled {mine.describe()}, now {theirs.describe()}"
        if len(self.ops) != len(other.ops):
            return f"compiled graph has {len(self.ops)} operations, now {len(other.ops)}"
        return None


class _Recorder:
    def __init__(self) -> None:
        self.ops: list[OpRecord] = []


_active: list[_Recorder] = []


def _describe_input(value: Any) -> tuple[tuple[int, ...], str]:
    array = np.asarray(value)
    return tuple(int(n) for n in array.shape), str(array.dtype)


def record(name: str, *inputs: Any) -> None:
    """Report an operation to the active trace (a no-op when nothing is being traced)."""
    if not _active:
        return
    described = [_describe_input(value) for value in inputs]
    _active[-1].ops.append(
        OpRecord(name=name, input_shapes=tuple(s for s, _ in described), input_dtypes=tuple(d for _, d in described))
    )


def is_tracing() -> bool:
    return bool(_active)


@contextmanager
def recording() -> Iterator[_Recorder]:
    """Collect every :func:`record` made inside the block."""
    recorder = _Recorder()
    _active.append(recorder)
    try:
        yield recorder
    finally:
        _active.remove(recorder)


def op_name(module: Any) -> str:
    """The operation a module call stands for: its class name in lower case (``Linear`` -> ``linear``)."""
    return type(module).__name__.lower()


def _recorded_forward(module: Any, x: Any) -> Any:
    """Report the call (its input first, then the layer's own weights) and run the real forward."""
    record(op_name(module), x, *(parameter.data for parameter in module.parameters()))
    return type(module).forward(module, x)


def _leaf_modules(model: Any) -> list[Any]:
    children = [child for _name, child in model.named_children()]
    if not children:
        return [model]
    return [leaf for child in children for leaf in _leaf_modules(child)]


@contextmanager
def module_calls_recorded(model: Any) -> Iterator[None]:
    """Make every leaf module of ``model`` report its forward calls as operations.

    The hook is an instance attribute bound with ``functools.partial``, so a deep copy of a layer
    (a weight-streaming replica) reports its own calls too. It is removed when the block ends.
    """
    leaves = _leaf_modules(model)
    for leaf in leaves:
        leaf.forward = functools.partial(_recorded_forward, leaf)
    try:
        yield
    finally:
        for leaf in leaves:
            vars(leaf).pop("forward", None)


def trace(step: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Graph, Any]:
    """Run ``step`` once and return the graph it performed together with its result."""
    check_callable("step", step)
    with recording() as recorder:
        result = step(*args, **kwargs)
    return Graph(tuple(recorder.ops)), result
