"""The lockstep run: what it reports, once, where; when it stops; what an unsupported call does; and
that each side runs in a process of its own, so nothing one does reaches the other or the harness."""

from __future__ import annotations

from typing import Any

import pytest

from csconform.errors import InterfaceError, InvalidInputError
from csconform.testing.differential.explore import Pair, implementations
from csconform.testing.differential.implementation import Implementation, Limits, Workdirs
from csconform.testing.differential.lockstep import START, run_lockstep
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature

HERE = "tests.unit.differential.implementations"
QUICK = Limits(call_s=3.0, program_s=20.0, import_s=60.0)
"""Short limits, so a hang costs the test seconds."""


def pair(against: str, limits: Limits = QUICK) -> tuple[Implementation, Implementation]:
    """The engine (A) and ``against`` (B, a module of implementations/ or the engine), each in its process."""
    name = against if against.startswith("csconform") else f"{HERE}.{against}"
    return implementations(Pair("csconform.engine", name, limits))


def run(program: tuple[str, ...], against: str, area: str = "grad_scaler") -> Any:
    a, b = pair(against)
    with Workdirs() as workdirs:
        return run_lockstep(Program(area, "cpu", program), a, b, workdirs)


def scaler_program(init_scale: float, *calls: str) -> tuple[str, ...]:
    return (
        "p0 = impl.nn.Parameter(np.array([1.0, 2.0], dtype=np.float32))",
        "opt = impl.optim.SGD([p0], lr=0.5)",
        f"scaler = impl.amp.GradScaler(loss_scale='dynamic', init_scale={init_scale})",
        *calls,
    )


SCALER = scaler_program(
    4.0,
    "p0.grad = np.array([4.0, 8.0], dtype=np.float32)",
    "scaler.unscale_(opt)",
    "scaler.step(opt)",
    "scaler.update()",
    "scaler.update(0.0)",
)


def test_the_engine_against_itself_shows_nothing() -> None:
    result = run(SCALER, "csconform.engine")
    assert result.differences == [] and result.statements_run == len(SCALER)


def test_a_rounding_difference_is_reported_once_and_does_not_stop_the_program() -> None:
    result = run(SCALER, "rounded_scale")
    assert [d.signature for d in result.differences] == [
        Signature("grad_scaler", "GradScaler.unscale_", "grads", "rounding"),
        Signature("grad_scaler", "GradScaler.step", "weights", "rounding"),
    ]
    assert [d.statement for d in result.differences] == [4, 5]
    assert result.statements_run == len(SCALER)


def test_a_divergent_difference_stops_the_program() -> None:
    program = (*SCALER, "scaler.get_scale()")
    result = run(program, "late_refusal")
    (only,) = result.differences
    assert only.signature.kind == "A refuses (GradScalerUsageError), B crashes (TypeError)"
    assert "TypeError: no new scale" in only.b and only.statement == 7
    assert result.statements_run == 8


def test_an_unsupported_call_ends_the_program_uncompared() -> None:
    result = run(SCALER, "no_unscale")
    assert result.differences == [] and result.statements_run == 5
    assert result.unsupported.startswith("GradScaler.unscale_: unscale_ cannot be shown")


def test_a_constructor_both_refuse_ends_the_program() -> None:
    program = ("scaler = impl.amp.GradScaler(loss_scale=-1.0)", "scaler.update()")
    result = run(program, "csconform.engine")
    assert result.differences == [] and result.statements_run == 1


# --- isolation: what B does cannot reach A or the harness ---------------------------------------------


@pytest.mark.parametrize(
    ("init_scale", "kind"),
    [
        (5.0, "A returns, B hangs"),
        (6.0, "A returns, B ends its process"),
        (7.0, "A returns, B crashes (SystemExit)"),
    ],
)
def test_a_side_that_hangs_or_ends_is_a_class_and_the_next_program_runs(init_scale: float, kind: str) -> None:
    program = scaler_program(init_scale, *SCALER[3:])
    result = run(program, "misbehaves_in_unscale")
    (only,) = result.differences
    assert only.signature == Signature("grad_scaler", "GradScaler.unscale_", "result", kind)
    assert result.statements_run == 5  # the program ends at the side that failed
    again = run(SCALER, "misbehaves_in_unscale")
    assert again.differences == [] and again.statements_run == len(SCALER)  # B was started again


def test_a_program_that_takes_longer_than_its_limit_ends_with_the_side_that_was_slow() -> None:
    a, b = pair("misbehaves_in_unscale", Limits(call_s=3.0, program_s=1.2, import_s=60.0))
    with Workdirs() as workdirs:
        result = run_lockstep(Program("grad_scaler", "cpu", scaler_program(9.0, *SCALER[3:])), a, b, workdirs)
    (only,) = result.differences  # every statement reads the scale: B takes 0.5 s a statement
    assert only.signature.kind == "A returns, B hangs" and "per program" in only.b
    assert result.statements_run < len(SCALER)


def test_an_implementation_that_patches_the_engine_in_place_changes_only_itself() -> None:
    program = scaler_program(4.0, "scaler.get_scale()")
    (patched,) = run(program, "patches_the_engine").differences
    assert patched.signature == Signature("grad_scaler", "GradScaler.__init__", "scaler.scale", "value")
    assert run(program, "csconform.engine").differences == []  # A, and the harness's engine, are untouched
    import csconform.engine

    assert float(csconform.engine.amp.GradScaler(loss_scale="dynamic", init_scale=4.0).get_scale()) == 4.0


@pytest.mark.parametrize(
    ("init_scale", "shown"),
    [
        (2.0, "scaler: (1.0, 1)"),  # a named tuple is compared as the tuple it is
        (3.0, "scaler: <Hostile>"),  # an object that is not data, whatever its repr and == do
        (4.0, "scaler: array('2026-11-28', dtype=datetime64[D])"),
        (8.0, "scaler: [8.0, [8.0, [8.0,"),  # a list that holds itself, to a depth
    ],
)
def test_any_value_an_implementation_returns_is_compared_and_shown(init_scale: float, shown: str) -> None:
    (only,) = run(scaler_program(init_scale, "scaler.get_scale()"), "odd_values").differences
    assert only.signature == Signature("grad_scaler", "GradScaler.__init__", "scaler.scale", "type")
    assert only.b.startswith(shown)


def test_values_of_the_same_shape_compare_equal_whatever_their_class() -> None:
    b, b_again = implementations(Pair(f"{HERE}.odd_values", f"{HERE}.odd_values", QUICK))
    with Workdirs() as workdirs:
        for scale in (2.0, 3.0, 4.0, 8.0):
            program = Program("grad_scaler", "cpu", scaler_program(scale, "scaler.get_scale()"))
            assert run_lockstep(program, b, b_again, workdirs).differences == []


def test_a_start_that_fails_is_a_class_of_its_own() -> None:
    result = run(SCALER, "fails_to_start")
    (only,) = result.differences
    assert only.signature == Signature("grad_scaler", START, "result", "A returns, B crashes (ValueError)")
    assert "no target cpu here" in only.b and result.statements_run == 0


def test_a_package_that_imports_its_submodules_on_first_use_is_compared() -> None:
    assert run(SCALER, "lazy_submodules").differences == []


@pytest.mark.parametrize(
    ("module", "error", "names"),
    [
        ("hangs_on_import", InterfaceError, "hangs while importing"),
        ("ends_on_import", InterfaceError, "exit code 3"),
        ("lacks_reset", InterfaceError, "reset is missing"),
        ("no_such_module", InvalidInputError, "no_such_module"),
    ],
)
def test_an_implementation_that_cannot_be_loaded_is_refused_naming_why(
    module: str, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        pair(module, Limits(call_s=3.0, program_s=20.0, import_s=5.0))
