"""The statement-by-statement pass of shrinking runs to a fixpoint: every statement left is needed."""

from __future__ import annotations

from csconform.testing.differential.program import Program
from csconform.testing.differential.shrink import drop_statements


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
