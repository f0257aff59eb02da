"""The areas the fuzzer explores, one module each: what an area needs and how it builds programs.

An :class:`Area` names the capabilities both implementations must declare for it to be compared (an
implementation that lacks one is not asked), and a Hypothesis strategy of the statements of its
programs; the area makes each program of a target both implementations run and those statements.
A strategy gets the :class:`Context` of the run (the targets both implementations run, the
capabilities both declare), so that, say, the optimizer area passes learning-rate schedules only
when both offer them. Strategies list simple choices first: Hypothesis shrinks towards them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from csconform.errors import UnknownNameError
from csconform.testing.differential.observables import OBSERVABLES
from csconform.testing.differential.program import Program


@dataclass(frozen=True)
class Context:
    targets: tuple[str, ...]
    capabilities: frozenset[str]


@dataclass(frozen=True)
class Area:
    name: str
    title: str
    capabilities: frozenset[str]
    statements: Callable[[Context], st.SearchStrategy[list[str]]]
    """The statements of one program (its source lines), drawn for the run's context."""
    observables: tuple[str, ...] = OBSERVABLES
    """What is compared after every statement (observables.py); the optimizer area alone compares how
    param groups store their hyperparameters."""
    nan_payloads: bool = False
    """Whether NaN payloads are compared: where values are converted or stored (precision, checkpoints),
    not where arithmetic makes NaNs (their payload is the hardware's)."""

    def programs(self, context: Context) -> st.SearchStrategy[Program]:
        """Programs of this area: a target both implementations run, then the area's statements."""
        return _programs(self, context)


@st.composite
def _programs(draw: st.DrawFn, area: Area, context: Context) -> Program:
    target = draw(st.sampled_from(context.targets))
    return Program(area.name, target, tuple(draw(area.statements(context))))


WITHOUT_PARAM_GROUPS = tuple(name for name in OBSERVABLES if name != "optimizer.param_groups")

AREA_NAMES = ("grad_scaler", "lr_schedule", "optimizer", "precision", "data", "checkpoint")
"""Every area, in the order a run explores and reports them (each is the module of that name here)."""


def get_area(name: str) -> Area:
    if name not in AREA_NAMES:
        raise UnknownNameError(f"unknown area {name!r}; known areas: {', '.join(AREA_NAMES)}")
    area: Area = importlib.import_module(f"{__name__}.{name}").AREA
    return area
