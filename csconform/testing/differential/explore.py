"""Hypothesis drives the search: explore an area with a seed, then shrink each class to a minimal repro.

Exploring runs a ``@given`` test over the area's programs, programmatically, with a fixed seed, no
example database and no shrinking: every program runs in lockstep, and every class of difference
is kept with the first program that showed it and its position in the seed's sequence of examples.
The test never fails, so one pass sees every class its examples show.

Each class is then shrunk from its first program (shrink.py).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed

from csconform.testing.differential.areas import Area, Context, get_area
from csconform.testing.differential.implementation import Implementation, Limits, Workdirs, start_implementation
from csconform.testing.differential.lockstep import Difference, run_lockstep
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature
from csconform.testing.reproducible_examples import draw_independently_of_loaded_modules


@dataclass(frozen=True)
class Occurrence:
    """Where a class first showed: the seed and the index of the example in its sequence."""

    seed: int
    example: int


@dataclass
class Finding:
    """A class as exploration saw it: its first program and how many programs showed it."""

    signature: Signature
    first: Occurrence
    program: Program
    difference: Difference
    programs: int = 1


@dataclass
class Exploration:
    """One area explored with one seed."""

    area: str
    seed: int
    examples: int = 0
    statements: int = 0
    unsupported: int = 0
    seconds: float = 0.0
    findings: dict[Signature, Finding] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """The two implementations compared, by module name (so a Dask worker can load them itself)."""

    engine: str
    against: str
    limits: Limits = Limits()


_started: dict[tuple[str, str, Limits], Implementation] = {}


def implementations(pair: Pair) -> tuple[Implementation, Implementation]:
    """The pair, each in a process of its own, started once per process of the harness (A and B are two
    processes even when they name the same module)."""
    for role, name in (("A", pair.engine), ("B", pair.against)):
        if (role, name, pair.limits) not in _started:
            _started[role, name, pair.limits] = start_implementation(name, pair.limits)
    return _started["A", pair.engine, pair.limits], _started["B", pair.against, pair.limits]


def context_of(a: Implementation, b: Implementation) -> Context:
    targets = tuple(target for target in a.declaration.targets if target in b.declaration.targets)
    return Context(targets, a.declaration.capabilities & b.declaration.capabilities)


def compared(area: Area, a: Implementation, b: Implementation) -> str:
    """Why the area cannot be compared on this pair ('' when it can)."""
    for implementation in (a, b):
        missing = sorted(area.capabilities - implementation.declaration.capabilities)
        if missing:
            return f"{implementation.name} does not declare {', '.join(missing)}"
    if not context_of(a, b).targets:
        return f"{a.name} and {b.name} run no common target"
    return ""


def hypothesis_test(
    area: Area, context: Context, seed: int, examples: int, body: Callable[[Program], None], shrink: bool
) -> Callable[[], None]:
    """A ``@given`` test of the area's programs with ``seed``, run by calling it."""
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )
    @hypothesis_seed(seed)
    @given(area.programs(context))
    def run(program: Program) -> None:
        body(program)

    return run


def run_test(run: Callable[[], None]) -> None:
    """Run a Hypothesis test: its examples depend on the seed alone, not on the modules loaded."""
    draw_independently_of_loaded_modules()
    run()


class _Found(BaseException):
    """Ends an exploration at the class it was asked to look for (Hypothesis lets a BaseException
    through at once: no replay, no shrinking)."""


def explore(area_name: str, pair: Pair, seed: int, examples: int, until: Signature | None = None) -> Exploration:
    """Run ``examples`` programs of the area drawn with ``seed``; every class, with its first program.

    ``until``: stop at the first program that shows this class (the programs drawn before it are the
    ones a full run draws, so a meta-test learns whether, and where, the run finds it, at a fraction
    of its cost).
    """
    area = get_area(area_name)
    a, b = implementations(pair)
    exploration = Exploration(area_name, seed)
    context = context_of(a, b)
    started = time.perf_counter()
    with Workdirs() as workdirs:

        def body(program: Program) -> None:
            run = run_lockstep(program, a, b, workdirs)
            index = exploration.examples
            exploration.examples += 1
            exploration.statements += run.statements_run
            exploration.unsupported += bool(run.unsupported)
            for difference in run.differences:
                finding = exploration.findings.get(difference.signature)
                if finding is None:
                    occurrence = Occurrence(seed, index)
                    exploration.findings[difference.signature] = Finding(
                        difference.signature, occurrence, program, difference
                    )
                elif finding.program is not program:
                    finding.programs += 1
            if until in run.signatures:
                raise _Found

        with contextlib.suppress(_Found):
            run_test(hypothesis_test(area, context, seed, examples, body, shrink=False))
    exploration.seconds = time.perf_counter() - started
    return exploration
