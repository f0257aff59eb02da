"""The implementation interface itself: the reference engine satisfies it, the validator names what
is missing, and the gate refuses undeclared capabilities and targets."""

from __future__ import annotations

import types

import pytest

import csconform.engine as reference
from csconform.errors import Unsupported
from csconform.interface import CAPABILITIES, CAPABILITY_NAMES, capability_of_path, declaration_of, validate
from csconform.interface.gate import ImplementationUnderTest
from csconform.interface.validate import Declaration, protocol_members


def test_the_reference_engine_implements_every_capability_on_both_targets():
    assert validate(reference) == []
    declaration, problems = declaration_of(reference)
    assert problems == [] and declaration is not None
    assert declaration.capabilities == frozenset(CAPABILITY_NAMES)
    assert declaration.targets == ("cs", "cpu") and dict(declaration.emulations) == {}


def test_every_submodule_path_belongs_to_one_capability():
    paths = [path for capability in CAPABILITIES for path in capability.modules]
    assert len(paths) == len(set(paths))
    assert capability_of_path("optim.lr_scheduler.StepLR") == "lr_schedule"
    assert capability_of_path("optim.SGD") == "optim"
    assert capability_of_path("compiler.System") == "graph"
    assert capability_of_path("context") is None


def test_every_protocol_lists_members():
    for capability in CAPABILITIES:
        for path, protocol in capability.modules.items():
            attributes, methods = protocol_members(protocol)
            assert attributes or methods, path


def _stripped_engine(**replacements: object) -> types.ModuleType:
    """A copy of the reference engine's top level with some submodules replaced."""
    module = types.ModuleType("stripped")
    for name in ("CAPABILITIES", "TARGETS", "EMULATIONS", "reset", "set_target", "use_target", "current_target"):
        setattr(module, name, getattr(reference, name))
    for name in reference.SUBMODULES:
        setattr(module, name, getattr(reference, name))
    for name, value in replacements.items():
        setattr(module, name, value)
    return module


def test_validation_names_a_missing_class_method_and_a_narrow_signature():
    class Scaler(reference.amp.GradScaler):
        step_if_finite = None  # type: ignore[assignment]

    amp = types.SimpleNamespace(
        GradScaler=Scaler, set_half_dtype=lambda: None, optimizer_step=reference.amp.optimizer_step
    )
    problems = validate(_stripped_engine(amp=amp))
    assert "stripped.amp.GradScaler.step_if_finite is missing" in problems
    assert "stripped.amp.set_half_dtype does not accept parameter(s) value" in problems


def test_validation_names_a_missing_classmethod():
    class Iterator(reference.data.DatasetIterator):
        restore = None  # type: ignore[assignment]

    data = types.SimpleNamespace(Dataset=reference.data.Dataset, DatasetIterator=Iterator, INFINITE=-1)
    assert "stripped.data.DatasetIterator.restore is missing" in validate(_stripped_engine(data=data))


def test_validation_refuses_a_bad_declaration():
    module = _stripped_engine(CAPABILITIES=frozenset({"telepathy"}), TARGETS=("gpu",))
    problems = validate(module)
    assert any("unknown capabilities ['telepathy']" in p for p in problems)
    assert any("TARGETS must be" in p for p in problems)


def test_the_gate_passes_declared_names_and_refuses_the_rest():
    declaration = Declaration(frozenset({"optim", "precision"}), ("cpu",), {"precision": "stand-in"})
    gate = ImplementationUnderTest(_stripped_engine(), declaration, "partial")
    assert gate.optim.SGD is reference.optim.SGD
    with pytest.raises(Unsupported, match="capability 'lr_schedule'"):
        gate.optim.lr_scheduler.StepLR  # noqa: B018
    with pytest.raises(Unsupported, match="capability 'amp'"):
        gate.amp  # noqa: B018
    with pytest.raises(Unsupported, match="target 'cs'"):
        gate.set_target("cs")
    with pytest.raises(Unsupported, match="target 'cs'"), gate.use_target("cs"):
        pass
    gate.reset()
    assert gate.current_target() == "cpu"
    gate.precision.half_dtype_name()
    assert gate.take_touched() == {"optim", "precision"}
    assert gate.take_touched() == set()
    reference.reset()
