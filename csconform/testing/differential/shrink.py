"""Shrink a class to a minimal repro: Hypothesis first, then statement by statement.

Shrinking reruns the area's ``@given`` test with the seed that found the class, with that one class
as its sole failure. Hypothesis draws the same examples in the same order (the examples before the
class's first occurrence are drawn but not run), finds the class at the recorded position, and
shrinks it. A budget counted in programs bounds it (``shrink_examples``: how many programs Hypothesis
may run after the first one, never seconds, so that the repro does not depend on the machine's
load): once it is spent the run stops and keeps the smallest program that showed the class so far.
That program is cut after the statement where the class first shows: the lockstep runs statement by
statement, so nothing later can matter to the class (and dropping the later statements one by one
would cost a class that hangs its time limit once per statement). Then each statement is dropped in
turn, last to first, and stays dropped if the class still shows without it; the pass is repeated
until one drops nothing (a statement can become droppable once an earlier one is gone): what is left
is a program in which every statement matters. The same class of the same run therefore always
shrinks to the same program.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from csconform.errors import CsConformError
from csconform.testing.differential.areas import Context, get_area
from csconform.testing.differential.explore import (
    Occurrence,
    Pair,
    context_of,
    hypothesis_test,
    implementations,
    run_test,
)
from csconform.testing.differential.implementation import Workdirs
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


Shows = Callable[[Program], bool]
"""Whether a program shows the class being shrunk."""


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


def _by_hypothesis(
    signature: Signature, context: Context, shows: Shows, first: Occurrence, examples: int, shrink_examples: int
) -> Program:
    drawn = [0]
    smallest: list[Program] = []

    def body(program: Program) -> None:
        index = drawn[0]
        drawn[0] += 1
        if index < first.example:
            return  # drawn as exploration drew it; it did not show the class
        if smallest and index - first.example > shrink_examples:
            raise _Stop  # the budget is spent
        if shows(program):
            smallest.append(program)  # each one Hypothesis keeps is smaller than the one before
            raise _Reproduced
        if index == first.example:
            raise _Stop

    area = get_area(signature.area)
    test = hypothesis_test(area, context, first.seed, max(examples, first.example + 1), body, shrink=True)
    with contextlib.suppress(_Reproduced, _Stop):
        run_test(test)
    if not smallest:
        raise NotReproduced(
            f"class {signature} did not show again at example {first.example} of seed {first.seed}: "
            "the two implementations do not behave the same way twice (is some state not reset?)"
        )
    return smallest[-1]


def through_the_class(run: LockstepRun, signature: Signature) -> Program:
    """The program of ``run`` cut after the statement where ``signature`` first shows (a class of the
    start keeps the first statement: a program is never empty)."""
    shows_at = next(d.statement for d in run.differences if d.signature == signature)
    program = run.program
    return Program(program.area, program.target, program.source[: max(shows_at + 1, 1)])


def drop_statements(program: Program, shows: Shows) -> Program:
    """``program`` with every statement dropped that the class does not need: passes last to first,
    repeated until one drops nothing."""
    while True:
        shorter = _statement_pass(program, shows)
        if shorter == program:
            return program
        program = shorter


def _statement_pass(program: Program, shows: Shows) -> Program:
    for index in reversed(range(len(program.source))):
        shorter = Program(program.area, program.target, program.source[:index] + program.source[index + 1 :])
        if shorter.source and shows(shorter):
            program = shorter
    return program


def shrink(signature: Signature, pair: Pair, first: Occurrence, examples: int, shrink_examples: int) -> Shrunk:
    """The smallest program found that still shows ``signature`` (see the module docstring); NotReproduced
    when the class does not show again. ``examples`` is the number of examples exploration ran with
    ``first.seed`` (Hypothesis draws them the same way only with the same count)."""
    a, b = implementations(pair)
    started = time.perf_counter()
    runs: dict[tuple[str, ...], LockstepRun] = {}
    with Workdirs() as workdirs:

        def shows(program: Program) -> bool:
            runs[program.source] = run_lockstep(program, a, b, workdirs)
            return signature in runs[program.source].signatures

        found = _by_hypothesis(signature, context_of(a, b), shows, first, examples, shrink_examples)
        program = drop_statements(through_the_class(runs[found.source], signature), shows)
        run = run_lockstep(program, a, b, workdirs)
    if signature not in run.signatures:
        raise NotReproduced(f"the minimal program of class {signature} does not show it when run again")
    return Shrunk(signature, program, run, time.perf_counter() - started)
