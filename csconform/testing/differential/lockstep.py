"""Run one program on two implementations in lockstep and record every disagreement.

Statement by statement, A and B run it, each in its own process (implementation.py); then the
outcomes (value, refusal by type, crash by type, a hang, an ended process) and every observable
(observables.py) are compared. Starting a program (reset, set_target) is compared the same way. A
difference is recorded once, at the statement that makes it appear or get worse: a rounding
difference in the weights is not reported again at every later statement that leaves the weights
alone. A statement is reported under its most severe new difference. The program stops at the
first *divergent* difference (the two runs no longer compute the same thing, so later statements
would only repeat it), at a side that hangs or ends its process, and at a statement both
implementations fail that binds a variable; rounding, layout, payload and bookkeeping differences do
not stop it. A call either implementation reports ``Unsupported`` ends the program uncompared.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from csconform.testing.differential.areas import Area, get_area
from csconform.testing.differential.compare import DIVERGENT, SEVERITY, difference
from csconform.testing.differential.implementation import Implementation, Workdirs
from csconform.testing.differential.observables import BOOKKEEPING, OBSERVABLES, opaque_result
from csconform.testing.differential.outcome import Outcome, show_value
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature

START = "start"
"""The call label of a program's first step: ``impl.reset()`` and ``impl.set_target(target)``."""


@dataclass(frozen=True)
class Difference:
    """One disagreement: its class, where it appeared, and what each implementation showed."""

    signature: Signature
    statement: int
    """Index of the statement in the program (-1: the start)."""
    a: str
    b: str


@dataclass
class LockstepRun:
    program: Program
    differences: list[Difference] = field(default_factory=list)
    statements_run: int = 0
    unsupported: str = ""
    """Why the run ended at an unsupported call (empty: it did not)."""

    @property
    def signatures(self) -> set[Signature]:
        return {d.signature for d in self.differences}


def rank(kind: str) -> int:
    """Severity: outcome differences above every value difference, a crash above a refusal."""
    if kind in SEVERITY:
        return SEVERITY.index(kind)
    return len(SEVERITY) + (1 if "crashes" in kind else 0)


def _outcome_kind(a: Outcome, b: Outcome) -> str | None:
    if (a.status, a.error) == (b.status, b.error):
        return None
    return f"A {a.describe()}, B {b.describe()}"


def _divergent(observable: str, kind: str) -> bool:
    return observable not in BOOKKEEPING and (kind in DIVERGENT or kind not in SEVERITY)


class _Observations:
    """What the lockstep has seen so far: the current kind of difference of every observable."""

    def __init__(self) -> None:
        self.current: dict[str, str | None] = {}

    def new(self, observable: str, kind: str | None) -> bool:
        """Record the kind now; True when it appeared or got worse since the last statement."""
        before = self.current.get(observable)
        self.current[observable] = kind
        return kind is not None and (before is None or rank(kind) > rank(before))


def _pick(found: list[tuple[str, str, str, str]]) -> tuple[str, str, str, str]:
    """The most severe difference, then the first observable in OBSERVABLES' order."""
    return max(found, key=lambda item: (rank(item[1]), -OBSERVABLES.index(item[0])))


def _differs(
    state_a: dict[str, Any], state_b: dict[str, Any], observable: str, variable: str, kind: str, payloads: bool
) -> bool:
    return difference(state_a[observable][variable], state_b[observable][variable], payloads) == kind


def _state_differences(
    state_a: dict[str, dict[str, Any]], state_b: dict[str, dict[str, Any]], area: Area
) -> list[tuple[str, str, str, str]]:
    found = []
    for observable in area.observables[1:]:
        kind = difference(state_a[observable], state_b[observable], area.nan_payloads)
        if kind is None:
            found.append((observable, "", "", ""))
            continue
        variable = next(
            (
                v
                for v in state_a[observable]
                if v in state_b[observable] and _differs(state_a, state_b, observable, v, kind, area.nan_payloads)
            ),
            None,
        )
        if variable is None:
            shown_a, shown_b = repr(sorted(state_a[observable])), repr(sorted(state_b[observable]))
        else:
            shown_a = f"{variable}: {show_value(state_a[observable][variable])}"
            shown_b = f"{variable}: {show_value(state_b[observable][variable])}"
        found.append((observable, kind, shown_a, shown_b))
    return found


def run_lockstep(program: Program, a: Implementation, b: Implementation, workdirs: Workdirs) -> LockstepRun:
    """Run ``program`` on A and B statement by statement, each in its own process and both at once; the
    disagreements, in order. A side that hangs or ends its process ends the program. The time limits
    are those A was started with (a pair is started with one set of limits)."""
    limits = a.limits
    run = LockstepRun(program)
    area = get_area(program.area)
    program_deadline = time.monotonic() + limits.program_s

    def both(send_a: Outcome | None, send_b: Outcome | None) -> tuple[Any, Any]:
        call_deadline = time.monotonic() + limits.call_s
        if call_deadline <= program_deadline:
            deadline, limit = call_deadline, f"the limit of {limits.call_s:g} s per call"
        else:
            deadline, limit = program_deadline, f"the limit of {limits.program_s:g} s per program"
        return send_a or a.receive(deadline, limit), send_b or b.receive(deadline, limit)

    workdir_a, workdir_b = workdirs.new(), workdirs.new()
    start_a, start_b = both(a.send_start(program.target, workdir_a), b.send_start(program.target, workdir_b))
    kind = _outcome_kind(start_a, start_b)
    if kind is not None:
        signature = Signature(program.area, START, "result", kind)
        run.differences.append(Difference(signature, -1, start_a.show(), start_b.show()))
    if start_a.status != "returned" or start_b.status != "returned":
        return run
    kinds: dict[str, str] = {}
    seen = _Observations()
    for index, statement in enumerate(program.statements):
        compare_result = not opaque_result(statement.label)
        reply_a, reply_b = both(
            a.send_statement(statement, kinds, compare_result), b.send_statement(statement, kinds, compare_result)
        )
        (outcome_a, state_a), (outcome_b, state_b) = _split(reply_a), _split(reply_b)
        run.statements_run += 1
        if "unsupported" in (outcome_a.status, outcome_b.status):
            unsupported = outcome_a if outcome_a.status == "unsupported" else outcome_b
            run.unsupported = f"{statement.label}: {unsupported.message}"
            break
        kinds = statement.kinds_after(kinds, outcome_a.status == outcome_b.status == "returned")
        found: list[tuple[str, str, str, str]] = []
        kind = _outcome_kind(outcome_a, outcome_b)
        if kind is None and outcome_a.status == "returned" and compare_result:
            kind = difference(outcome_a.value, outcome_b.value, area.nan_payloads)
        found.append(("result", kind or "", outcome_a.show(), outcome_b.show()))
        if state_a is not None and state_b is not None:
            found += _state_differences(_live(state_a, kinds), _live(state_b, kinds), area)
        # a result belongs to its statement; a state difference is new only if it appeared or got worse
        new = [item for item in found if seen.new(item[0], item[1] or None) or (item[0] == "result" and item[1])]
        if new:
            observable, kind, shown_a, shown_b = _pick(new)
            signature = Signature(program.area, statement.label, observable, kind)
            run.differences.append(Difference(signature, index, shown_a, shown_b))
            if any(_divergent(item[0], item[1]) for item in new):
                break
        if state_a is None or state_b is None:
            break  # a side hung or ended: its namespace is gone
        if statement.binds and outcome_a.status != "returned" and outcome_b.status != "returned":
            break  # nothing later can use what this statement failed to make
    return run


def _split(reply: Any) -> tuple[Outcome, dict[str, dict[str, Any]] | None]:
    """(outcome, state) of an answer; a side that hung or ended has no state."""
    return (reply, None) if isinstance(reply, Outcome) else reply


def _live(state: dict[str, dict[str, Any]], kinds: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The state of the variables both sides bound (a side observes what it bound itself)."""
    return {observable: {v: value for v, value in values.items() if v in kinds} for observable, values in state.items()}
