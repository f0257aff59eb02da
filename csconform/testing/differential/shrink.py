"""Shrink a class to a minimal repro: Hypothesis first, then statement by statement.

Shrinking reruns the area's ``@given`` test with the seed that found the class, with that one class
as its sole failure. Hypothesis draws the same examples in the same order (the examples before the
class's first occurrence are drawn but not run), finds the class at the recorded position, and
shrinks it. A time budget bounds it: once the budget is spent the run stops and keeps the smallest
program that showed the class so far. Then each statement is dropped in turn, last to first, and
stays dropped if the class still shows without it: what is left is a program in which every
statement matters.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from csconform.errors import CsConformError
from csconform.testing.differential.areas import get_area
from csconform.testing.differential.explore import (
    Occurrence,
    Pair,
    context_of,
    hypothesis_test,
    implementations,
    run_test,
)
from csconform.testing.differential.implementation import Implementation, Workdirs
from csconform.testing.differential.lockstep import Difference, LockstepRun, run_lockstep
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature


class NotReproduced(CsConformError):
    """The class did not show again where it showed before: one implementation is not deterministic."""


class _Reproduced(Exception):
    """The sole failure of a shrinking run: the program showed the class."""


class _Stop(BaseException):
    """Ends a shrinking run at once (Hypothesis lets a BaseException through): the budget is spent,
    or the class did not show where exploration saw it."""


@dataclass(frozen=True)
class Shrunk:
    """A class's minimal program and the lockstep run of it."""

    signature: Signature
    program: Program
    run: LockstepRun
    seconds: float

    @property
    def difference(self) -> Difference:
        return next(d for d in self.run.differences if d.signature == self.signature)


def _shown(program: Program, signature: Signature, a: Implementation, b: Implementation, workdirs: Workdirs) -> bool:
    return signature in run_lockstep(program, a, b, workdirs).signatures


def _by_hypothesis(
    signature: Signature, a: Implementation, b: Implementation, first: Occurrence, examples: int, budget_s: float
) -> Program:
    started = time.perf_counter()
    drawn = [0]
    smallest: list[Program] = []
    with Workdirs() as workdirs:

        def body(program: Program) -> None:
            index = drawn[0]
            drawn[0] += 1
            if index < first.example:
                return  # drawn as exploration drew it; it did not show the class
            if smallest and time.perf_counter() - started > budget_s:
                raise _Stop
            if _shown(program, signature, a, b, workdirs):
                smallest.append(program)  # each one Hypothesis keeps is smaller than the one before
                raise _Reproduced
            if index == first.example:
                raise _Stop

        area = get_area(signature.area)
        test = hypothesis_test(area, context_of(a, b), first.seed, max(examples, first.example + 1), body, shrink=True)
        with contextlib.suppress(_Reproduced, _Stop):
            run_test(test)
    if not smallest:
        raise NotReproduced(
            f"class {signature} did not show again at example {first.example} of seed {first.seed}: "
            "the two implementations do not behave the same way twice (is some state not reset?)"
        )
    return smallest[-1]


def _by_statements(program: Program, signature: Signature, a: Implementation, b: Implementation) -> Program:
    with Workdirs() as workdirs:
        index = len(program.source) - 1
        while index >= 0:
            shorter = Program(program.area, program.target, program.source[:index] + program.source[index + 1 :])
            if shorter.source and _shown(shorter, signature, a, b, workdirs):
                program = shorter
            index -= 1
    return program


def shrink(signature: Signature, pair: Pair, first: Occurrence, examples: int, budget_s: float) -> Shrunk:
    """The smallest program found that still shows ``signature`` (see the module docstring); NotReproduced
    when the class does not show again."""
    a, b = implementations(pair)
    started = time.perf_counter()
    program = _by_statements(_by_hypothesis(signature, a, b, first, examples, budget_s), signature, a, b)
    with Workdirs() as workdirs:
        run = run_lockstep(program, a, b, workdirs)
    if signature not in run.signatures:
        raise NotReproduced(f"the minimal program of class {signature} does not show it when run again")
    return Shrunk(signature, program, run, time.perf_counter() - started)
