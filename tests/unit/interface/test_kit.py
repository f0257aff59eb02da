"""The kit for implementations (csconform/interface/kit/): what the reference engine and the cstorch
adapter share, and the one choice it leaves them, whether a state dict may hold non-finite weights.

The adapter needs the vendor's package, which this environment does not have, so what these tests
say of it they read from its source; the conformance run against the package (tox -e cstorch) runs
it, and its triage expects RUNNER-031 to fail there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import csconform
import csconform.engine as engine
from csconform.errors import ExecutionModeError, InvalidInputError
from csconform.interface.kit import loss, modules, package, runs
from csconform.interface.kit.batching import stack
from csconform.interface.kit.checkpoint_sections import DataPosition, data_position

ADAPTER_NN = Path(csconform.__file__).parent / "adapters" / "cstorch" / "nn.py"


# --- Sequential and the state dict contract ---------------------------------------------------------


class Weight:
    def __init__(self, *shape: int) -> None:
        self.data = np.zeros(shape, dtype=np.float32)
        self.grad: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape


class Layer(modules.ModuleTree):
    """A minimal implementation's module that, like a package loading whatever it is given, takes
    non-finite weights."""

    refuses_non_finite_weights = False

    def __init__(self) -> None:
        self.weight, self.bias = Weight(2, 3), Weight(2)

    def own_parameters(self) -> Iterator[tuple[str, Any]]:
        yield from (("weight", self.weight), ("bias", self.bias))

    def assign_weights(self, weights: Mapping[str, np.ndarray]) -> None:
        for name, parameter in self.named_parameters():
            parameter.data = weights[name]

    def __call__(self, x: Any) -> Any:
        return x


class Sequential(modules.Sequential, Layer):
    def own_parameters(self) -> Iterator[tuple[str, Any]]:
        return iter(())


def engine_model() -> Any:
    engine.nn.manual_seed(0)
    return engine.nn.Sequential(engine.nn.Linear(3, 2), engine.nn.ReLU(), engine.nn.Linear(2, 2))


def test_the_engine_refuses_non_finite_weights_and_keeps_the_old_ones():
    model = engine_model()
    before = model.state_dict()
    for bad in (np.nan, np.inf):
        state = {name: value + 1 for name, value in before.items()}
        state["layers.2.bias"] = np.full(2, bad)
        with pytest.raises(InvalidInputError, match=r"layers\.2\.bias"):
            model.load_state_dict(state)
        assert all(np.array_equal(model.state_dict()[name], value) for name, value in before.items())


def test_an_implementation_that_takes_non_finite_weights_loads_them():
    model = Sequential(Layer(), Layer())
    state = {name: np.full(value.shape, np.nan) for name, value in model.state_dict().items()}
    model.load_state_dict(state)
    assert all(np.isnan(value).all() for value in model.state_dict().values())


@pytest.mark.parametrize("build", [engine_model, lambda: Sequential(Layer(), Layer())], ids=["engine", "kit"])
def test_every_implementation_refuses_a_state_dict_that_is_not_the_models_and_changes_nothing(build):
    model = build()
    before = model.state_dict()
    names = sorted(before)
    wrong = [
        ([names[0], np.zeros(1)], names[0]),  # shape
        ([names[-1], "text"], names[-1]),  # not numbers
        (["extra", np.zeros(1)], "extra"),  # a name the model does not have
    ]
    for (name, value), named in wrong:
        state = {**{key: array + 1 for key, array in before.items()}, name: value}
        with pytest.raises(InvalidInputError, match=named):
            model.load_state_dict(state)
        assert all(np.array_equal(model.state_dict()[key], array) for key, array in before.items())
    with pytest.raises(InvalidInputError):
        model.load_state_dict([("weight", 1)])


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    return {
        node.name: node for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, ast.ClassDef)
    }


def _assigned(node: ast.ClassDef, name: str) -> Any:
    for statement in node.body:
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == name for t in statement.targets):
            return ast.literal_eval(statement.value)
    return None


def test_engine_and_adapter_take_sequential_and_the_state_dicts_from_the_kit_and_name_their_choice():
    assert engine.nn.Module.refuses_non_finite_weights is True
    assert issubclass(engine.nn.Sequential, modules.Sequential) and issubclass(engine.nn.Module, modules.ModuleTree)
    for name in ("state_dict", "load_state_dict", "checked_weights", "named_parameters"):
        assert getattr(engine.nn.Sequential, name) is getattr(modules.ModuleTree, name)
    adapter = _classes(ADAPTER_NN)
    assert _assigned(adapter["Module"], "refuses_non_finite_weights") is False
    assert [ast.unparse(base) for base in adapter["Module"].bases] == ["kit_modules.ModuleTree"]
    assert [ast.unparse(base) for base in adapter["Sequential"].bases] == ["kit_modules.Sequential", "Module"]
    defined = {
        statement.name for node in adapter.values() for statement in node.body if isinstance(statement, ast.FunctionDef)
    }
    assert not defined & {"state_dict", "load_state_dict", "checked_weights", "named_parameters", "__getitem__"}


def test_sequential_runs_its_layers_in_order_and_backward_in_reverse():
    model = engine_model()
    x = np.ones((4, 3), dtype=np.float32)
    expected = model[2](model[1](model[0](x)))
    assert np.array_equal(model(x), expected) and len(model) == 3
    with pytest.raises(InvalidInputError, match="Sequential layer 1"):
        engine.nn.Sequential(engine.nn.ReLU(), 3)


# --- Loss, batches, runs ---------------------------------------------------------------------------


class Value(loss.Loss):
    def __init__(self, value: float) -> None:
        self.number = value
        self.backward_calls = 0

    @property
    def value(self) -> np.float32:
        return np.float32(self.number)

    def scaled(self, factor: float) -> Value:
        return Value(self.number * factor)

    def backward(self) -> None:
        self.backward_calls += 1


def test_a_loss_scales_by_real_numbers_from_either_side_and_reads_as_a_number():
    base = Value(1.5)
    assert (base * 2).item() == 3.0 and float(np.float32(4) * base) == 6.0 and float(base * np.int64(2)) == 3.0
    assert repr(base).startswith("Value(value=") and "1.5" in repr(base)
    for factor in (True, "2", None, [2.0]):
        with pytest.raises(TypeError):
            base * factor  # noqa: B018


def test_a_batch_stacks_elements_component_by_component():
    elements = [(np.array([1, 2]), None, {"mask": np.array(0)}), (np.array([3, 4]), None, {"mask": np.array(1)})]
    features, labels, extra = stack(elements)
    assert features.tolist() == [[1, 2], [3, 4]] and labels is None and extra["mask"].tolist() == [0, 1]


def test_a_batch_of_elements_of_different_shapes_is_refused_naming_them():
    with pytest.raises(InvalidInputError, match=r"\(1, 2\)") as refused:
        stack([np.zeros((2, 2)), np.zeros((1, 2))])
    assert "(2, 2)" in str(refused.value)


class Run(runs.Runner):
    def prepare(self) -> None:
        self.prepared_with = (self.model, self.mode)


def test_a_runner_checks_the_interfaces_arguments_then_prepares(tmp_path):
    run = Run("model", len, object(), checkpoint_steps=2, checkpoint_dir=str(tmp_path))
    assert run.prepared_with == ("model", "train") and run.checkpoint_dir == tmp_path
    assert (run.steps_completed, run.last_checkpoint_step) == (0, None)
    assert Run("model", len, mode="eval").optimizer is None
    refused = [
        ({"mode": "fit"}, "mode"),
        ({"mode": ["train"]}, "mode"),
        ({}, "optimizer"),
        ({"optimizer": object(), "checkpoint_steps": 2}, "checkpoint_dir"),
        ({"optimizer": object(), "checkpoint_dir": 3}, "checkpoint_dir"),
    ]
    for options, named in refused:
        with pytest.raises(InvalidInputError, match=named):
            Run("model", len, **options)


def test_only_a_training_run_trains_and_only_for_a_positive_number_of_steps():
    assert Run("model", len, object()).check_training(np.int64(3)) == 3
    with pytest.raises(ExecutionModeError, match="eval"):
        Run("model", len, mode="eval").check_training(3)
    for steps in (0, 2.0, True, 2**63):
        with pytest.raises(InvalidInputError, match="steps"):
            Run("model", len, object()).check_training(steps)


def test_runners_yield_the_kits_step_output():
    assert engine.runner.StepOutput is runs.StepOutput


# --- the implementation module ------------------------------------------------------------------------


def test_a_target_switch_sets_uses_and_resets_its_target():
    switch = package.TargetSwitch(("cs", "cpu"), "cs", "the test implementation")
    with switch.use("cpu"):
        assert switch.current() == "cpu"
    assert switch.current() == "cs"
    with pytest.raises(InvalidInputError, match="the test implementation runs: cs, cpu"):
        switch.set("gpu")
    switch.set("cpu")
    switch.reset()
    assert switch.current() == "cs"


def test_submodules_are_imported_on_first_use():
    lookup = package.submodules_on_first_use("csconform.interface.kit", ("batching",))
    assert lookup("batching").stack is stack
    with pytest.raises(AttributeError, match="runs"):
        lookup("runs")  # a submodule the package does not list


def test_a_data_position_is_written_and_read_back():
    class Iterator(DataPosition):
        seed_entropy, elements_produced = 7, 3

    assert data_position(Iterator().state()) == (7, 3)
    for state in ({"seed_entropy": 1}, {"seed_entropy": 1, "elements_produced": -1}, {"seed_entropy": "x"}):
        with pytest.raises(InvalidInputError, match="dataset iterator state"):
            data_position(state)


def test_a_compiled_model_view_is_its_model_but_for_calling():
    class Compiled(modules.CompiledModelView):
        def __init__(self, model: Any) -> None:
            self.model = model

    model = engine_model()
    compiled = Compiled(model)
    assert compiled.parameters() == model.parameters() and compiled.eval() is model
    with pytest.raises(AttributeError):
        Compiled.__new__(Compiled).model  # noqa: B018 - never set: no recursion through __getattr__
