"""The lockstep run: what it reports, once, where; when it stops; what an unsupported call does."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

import csconform.engine as engine
from csconform.errors import Unsupported
from csconform.interface.validate import declaration_of
from csconform.testing.differential.implementation import Implementation, Workdirs, load_implementation
from csconform.testing.differential.lockstep import run_lockstep
from csconform.testing.differential.program import Program
from csconform.testing.differential.signature import Signature


@pytest.fixture(scope="module")
def reference() -> Implementation:
    return load_implementation("csconform.engine")


def implementation(module: ModuleType) -> Implementation:
    declaration, problems = declaration_of(module)
    assert declaration is not None, problems
    return Implementation(module.__name__, module, declaration, "test 1.0")


def run(program: tuple[str, ...], a: Implementation, b: Implementation, area: str = "grad_scaler") -> Any:
    with Workdirs() as workdirs:
        return run_lockstep(Program(area, "cpu", program), a, b, workdirs)


SCALER = (
    "p0 = impl.nn.Parameter(np.array([1.0, 2.0], dtype=np.float32))",
    "opt = impl.optim.SGD([p0], lr=0.5)",
    "scaler = impl.amp.GradScaler(loss_scale='dynamic', init_scale=4.0)",
    "p0.grad = np.array([4.0, 8.0], dtype=np.float32)",
    "scaler.unscale_(opt)",
    "scaler.step(opt)",
    "scaler.update()",
    "scaler.update(0.0)",
)


def test_the_engine_against_itself_shows_nothing(reference: Implementation) -> None:
    result = run(SCALER, reference, reference)
    assert result.differences == [] and result.statements_run == len(SCALER)


def _engine_with_amp(**replacements: Any) -> Implementation:
    module = ModuleType("perturbed")
    module.__dict__.update({k: getattr(engine, k) for k in ("CAPABILITIES", "TARGETS", "reset", "set_target")})
    amp = ModuleType("perturbed.amp")
    amp.__dict__.update(vars(engine.amp))
    amp.__dict__.update(replacements)
    module.amp = amp  # type: ignore[attr-defined]
    for name in ("nn", "optim", "precision"):
        setattr(module, name, getattr(engine, name))
    return implementation(module)


class _RoundedScale(engine.amp.GradScaler):
    """Unscales by a scale a hair off: gradients differ by rounding, nothing else."""

    def unscale_(self, optimizer: Any) -> None:
        super().unscale_(optimizer)
        for group in optimizer.param_groups:
            for param in group["params"]:
                param.grad = param.grad * np.float32(1 + 2**-22)


class _LateRefusal(engine.amp.GradScaler):
    def update(self, new_scale: Any = None) -> None:
        if new_scale is not None:
            raise TypeError("no new scale")
        super().update()


def test_a_rounding_difference_is_reported_once_and_does_not_stop_the_program(reference: Implementation) -> None:
    result = run(SCALER, reference, _engine_with_amp(GradScaler=_RoundedScale))
    assert [d.signature for d in result.differences] == [
        Signature("grad_scaler", "GradScaler.unscale_", "grads", "rounding"),
        Signature("grad_scaler", "GradScaler.step", "weights", "rounding"),
    ]
    assert [d.statement for d in result.differences] == [4, 5]
    assert result.statements_run == len(SCALER)


def test_a_divergent_difference_stops_the_program(reference: Implementation) -> None:
    program = (*SCALER, "scaler.get_scale()")
    result = run(program, reference, _engine_with_amp(GradScaler=_LateRefusal))
    (only,) = result.differences
    assert only.signature.kind == "A refuses (GradScalerUsageError), B crashes (TypeError)"
    assert "TypeError: no new scale" in only.b and only.statement == 7
    assert result.statements_run == 8


class _NoUnscale(engine.amp.GradScaler):
    def unscale_(self, optimizer: Any) -> None:
        raise Unsupported("unscale_ cannot be shown on this backend")


def test_an_unsupported_call_ends_the_program_uncompared(reference: Implementation) -> None:
    result = run(SCALER, reference, _engine_with_amp(GradScaler=_NoUnscale))
    assert result.differences == [] and result.statements_run == 5
    assert result.unsupported.startswith("GradScaler.unscale_: unscale_ cannot be shown")


def test_a_constructor_both_refuse_ends_the_program(reference: Implementation) -> None:
    program = ("scaler = impl.amp.GradScaler(loss_scale=-1.0)", "scaler.update()")
    result = run(program, reference, reference)
    assert result.differences == [] and result.statements_run == 1
