"""Run one program on two implementations in lockstep and record every disagreement.

Statement by statement, A runs it, then B; then the outcomes (value, refusal by type, crash by
type) and every observable (observables.py) are compared. A difference is recorded once, at the
statement that makes it appear or get worse: a rounding difference in the weights is not reported
again at every later statement that leaves the weights alone. A statement is reported under its
most severe new difference. The program stops at the first *divergent* difference (the two runs no
longer compute the same thing, so later statements would only repeat it) and at a statement both
implementations fail that binds a variable; rounding, layout, payload and bookkeeping differences do
not stop it. A call either implementation reports ``Unsupported`` ends the program uncompared.
"""

from __future__ import annotations

import gc
import warnings
from dataclasses import dataclass, field
from typing import Any

from csconform.testing.differential.areas import Area, get_area
from csconform.testing.differential.compare import DIVERGENT, SEVERITY, comparable, difference
from csconform.testing.differential.implementation import Implementation, Outcome, Workdirs, execute
from csconform.testing.differential.observables import BOOKKEEPING, OBSERVABLES, observe_state, opaque_result
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature


@dataclass(frozen=True)
class Difference:
    """One disagreement: its class, where it appeared, and what each implementation showed."""

    signature: Signature
    statement: int
    """Index of the statement in the program."""
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
            shown_a = f"{variable}: {Outcome('returned', state_a[observable][variable]).show()}"
            shown_b = f"{variable}: {Outcome('returned', state_b[observable][variable]).show()}"
        found.append((observable, kind, shown_a, shown_b))
    return found


def run_lockstep(program: Program, a: Implementation, b: Implementation, workdirs: Workdirs) -> LockstepRun:
    """Run ``program`` on A and B statement by statement; the disagreements, in order.

    The implementations' warnings (deprecations, notes) are silenced: they are not observations.
    """
    _collect_and_freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _run(program, a, b, workdirs)


def _collect_and_freeze() -> None:
    """Collect the previous program's garbage, then freeze what survives (the harness's own objects,
    Hypothesis' growing record of examples). An implementation that collects garbage itself (the
    cstorch adapter does, for every GradScaler) then scans only this program's objects, however many
    programs ran before: without this a campaign slows down with every example."""
    gc.collect()
    gc.freeze()


def _run(program: Program, a: Implementation, b: Implementation, workdirs: Workdirs) -> LockstepRun:
    run = LockstepRun(program)
    area = get_area(program.area)
    workdir_a, workdir_b = workdirs.new(), workdirs.new()
    space_a = a.start(program.target, workdir_a)
    space_b = b.start(program.target, workdir_b)
    kinds: dict[str, str] = {}
    seen = _Observations()
    for index, statement in enumerate(program.statements):
        outcome_a = execute(statement.source, space_a)
        outcome_b = execute(statement.source, space_b)
        run.statements_run += 1
        if "unsupported" in (outcome_a.status, outcome_b.status):
            unsupported = outcome_a if outcome_a.status == "unsupported" else outcome_b
            run.unsupported = f"{statement.label}: {unsupported.message}"
            break
        if statement.binds:
            if statement.binds_kind and outcome_a.status == outcome_b.status == "returned":
                kinds[statement.binds] = statement.binds_kind
            else:
                kinds.pop(statement.binds, None)
        found: list[tuple[str, str, str, str]] = []
        kind = _outcome_kind(outcome_a, outcome_b)
        if kind is None and outcome_a.status == "returned" and not opaque_result(statement.label):
            values = comparable(outcome_a.value, workdir_a), comparable(outcome_b.value, workdir_b)
            kind = difference(*values, area.nan_payloads)
        found.append(("result", kind or "", outcome_a.show(), outcome_b.show()))
        state_a, state_b = observe_state(space_a, kinds, workdir_a), observe_state(space_b, kinds, workdir_b)
        found += _state_differences(state_a, state_b, area)
        # a result belongs to its statement; a state difference is new only if it appeared or got worse
        new = [item for item in found if seen.new(item[0], item[1] or None) or (item[0] == "result" and item[1])]
        if new:
            observable, kind, shown_a, shown_b = _pick(new)
            signature = Signature(program.area, statement.label, observable, kind)
            run.differences.append(Difference(signature, index, shown_a, shown_b))
            if any(_divergent(item[0], item[1]) for item in new):
                break
        if statement.binds and outcome_a.status != "returned" and outcome_b.status != "returned":
            break  # nothing later can use what this statement failed to make
    return run
