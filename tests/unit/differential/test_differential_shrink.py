"""The statement-by-statement pass of shrinking runs to a fixpoint: every statement left is needed;
before it, a program is cut after the statement where its class first shows."""

from __future__ import annotations

import pytest

from csconform.testing.differential.lockstep import Difference, LockstepRun
from csconform.testing.differential.program import Program
from csconform.testing.differential.shrink import drop_statements, through_the_class
from csconform.testing.differential.signature import Signature

HANG = Signature("grad_scaler", "GradScaler.get_scale", "result", "A returns, B hangs")
OTHER = Signature("grad_scaler", "GradScaler.update", "scale", "different values")


def _program(*source: str) -> Program:
    return Program("grad_scaler", "cpu", source)


def test_a_statement_that_becomes_droppable_later_is_dropped_by_another_pass() -> None:
    """``c`` is needed while ``a`` is there; ``a`` goes only after ``c`` was tried (passes run last to
    first): one pass keeps ``b, c``, the next drops ``c``."""
    showing = {("a", "b", "c"), ("b", "c"), ("b",)}
    assert drop_statements(_program("a", "b", "c"), lambda program: program.source in showing).source == ("b",)


def test_every_statement_left_is_needed() -> None:
    needed = {"x = 1", "y = x"}

    def shows(program: Program) -> bool:
        return needed <= set(program.source)

    program = _program("a = 0", "x = 1", "b = 2", "y = x", "c = 3")
    assert drop_statements(program, shows).source == ("x = 1", "y = x")


def test_a_program_is_never_shrunk_to_nothing() -> None:
    assert drop_statements(_program("only()"), lambda program: True).source == ("only()",)


@pytest.mark.parametrize(
    ("differences", "kept"),
    [
        ([Difference(HANG, 1, "1.0", "no answer")], ("a()", "b()")),
        # the class's own statement, not an earlier difference of another class
        ([Difference(OTHER, 0, "1.0", "2.0"), Difference(HANG, 2, "1.0", "no answer")], ("a()", "b()", "c()")),
        ([Difference(HANG, 3, "1.0", "no answer")], ("a()", "b()", "c()", "d()")),
        # a class of the start (statement -1) keeps one statement: a program is never empty
        ([Difference(HANG, -1, "started", "no answer")], ("a()",)),
    ],
)
def test_a_program_is_cut_after_the_statement_where_its_class_first_shows(differences, kept) -> None:
    run = LockstepRun(_program("a()", "b()", "c()", "d()"), differences)
    cut = through_the_class(run, HANG)
    assert cut.source == kept
    assert (cut.area, cut.target) == ("grad_scaler", "cpu")
