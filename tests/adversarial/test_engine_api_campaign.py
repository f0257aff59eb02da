"""The adversarial campaign over the reference engine's public API.

Every function, class and method the implementation interface lists (csconform/interface/, the
Protocols of each capability) is called with arguments of the wrong type: one argument junk (None,
booleans, huge or negative integers, NaN and infinities, strings, bytes, nested or ragged lists,
mappings, arrays of the wrong dtype or rank, callables, arbitrary objects), the others valid where
a valid value of that name is known. The property: the call returns, or refuses with a
:class:`~csconform.errors.CsConformError` (or ``Unsupported``); never a bare TypeError,
AttributeError, IndexError, KeyError, ValueError, ZeroDivisionError, RecursionError or
MemoryError from inside, and never past its time limit.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from adversarial_cases import _alarm, _TimeLimit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csconform.engine as engine
from csconform.errors import CsConformError, Unsupported
from csconform.interface.capabilities import CAPABILITIES
from csconform.interface.validate import class_protocol, protocol_members

CALL_LIMIT_S = 20.0
SCALE = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "nightly" else 1


# --- the values --------------------------------------------------------------------------------------


class Opaque:
    """An object of a type no API expects."""


def junk_values() -> list[Any]:
    return [
        None,
        True,
        0,
        -1,
        2**70,
        2**40,
        1.5,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        "",
        "x",
        b"\xff",
        [],
        [1, "a"],
        [[1.0, 2.0], [3.0]],
        (),
        {},
        {"a": 1},
        Opaque(),
        np.array([np.nan, 1.0], dtype=np.float32),
        np.zeros(0, dtype=np.float32),
        np.zeros((2, 3, 4), dtype=np.float32),
        np.array(["a", "b"]),
        np.float16(2.0),
        np.int64(-3),
        complex(1, 2),
        lambda *args, **kwargs: None,
        Path("nowhere"),
    ]


JUNK = st.sampled_from(range(len(junk_values()))).map(lambda index: junk_values()[index])


def small_model() -> Any:
    engine.nn.manual_seed(0)
    return engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 2))


def dataset() -> Any:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 3)).astype(np.float32), rng.integers(0, 2, 8)
    return engine.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True)


def loss_of(model: Any) -> Any:
    return engine.nn.cross_entropy(model(np.ones((2, 3), np.float32)), np.array([0, 1]))


def minimal_state() -> dict[str, Any]:
    return {
        "step": 0,
        "model": {"w": np.ones(3, np.float32)},
        "optimizer": {"global_step": 0, "state": {}},
        "grad_scaler": {},
        "data": {"seed_entropy": 1, "elements_produced": 0},
    }


# a valid value for an argument of this name (a fresh one each time)
VALID: dict[str, Callable[[], Any]] = {
    "array": lambda: np.ones((2, 3), np.float32),
    "x": lambda: np.ones((2, 3), np.float32),
    "logits": lambda: np.ones((2, 3), np.float32),
    "prediction": lambda: np.ones((2, 3), np.float32),
    "predictions": lambda: np.ones((2, 3), np.float32),
    "grad_out": lambda: np.ones((2, 2), np.float32),
    "targets": lambda: np.array([0, 1]),
    "target": lambda: np.zeros((2, 3), np.float32),
    "labels": lambda: np.array([0, 1]),
    "values": lambda: np.ones(3),
    "name": lambda: "float16",
    "value": lambda: "float16",
    "seed": lambda: 0,
    "hidden": lambda: 4,
    "inputs": lambda: 3,
    "classes": lambda: 2,
    "data": lambda: np.ones(3, np.float32),
    "in_features": lambda: 3,
    "out_features": lambda: 2,
    "p": lambda: 0.5,
    "normalized_shape": lambda: 3,
    "num_embeddings": lambda: 5,
    "embedding_dim": lambda: 3,
    "d_model": lambda: 4,
    "num_heads": lambda: 2,
    "d_ff": lambda: 8,
    "params": lambda: small_model().parameters(),
    "lr": lambda: 0.1,
    "momentum": lambda: 0.9,
    "betas": lambda: (0.9, 0.999),
    "eps": lambda: 1e-6,
    "weight_decay": lambda: 0.0,
    "learning_rate": lambda: 0.1,
    "initial_learning_rate": lambda: 0.1,
    "end_learning_rate": lambda: 0.01,
    "total_iters": lambda: 10,
    "decay_rate": lambda: 0.5,
    "gamma": lambda: 0.5,
    "step_size": lambda: 3,
    "milestones": lambda: [2, 5],
    "schedulers": lambda: [engine.optim.lr_scheduler.ConstantLR(0.1), engine.optim.lr_scheduler.ConstantLR(0.2)],
    "learning_rates": lambda: [0.1, 0.05, 0.01],
    "base_lr": lambda: 0.01,
    "max_lr": lambda: 0.1,
    "T_max": lambda: 10,
    "multiplier": lambda: 0.9,
    "path": lambda: "ckpt/state.ckpt",
    "state": lambda: minimal_state(),
    "state_dict": lambda: {},
    "metric": lambda: engine.metrics.Mean(),
    "batches": lambda: [(np.ones(2),)],
    "model": small_model,
    "loss_fn": lambda: engine.nn.cross_entropy,
    "optimizer": lambda: engine.optim.SGD(small_model().parameters(), lr=0.1),
    "optimizers": lambda: [engine.optim.SGD(small_model().parameters(), lr=0.1)],
    "grad_scaler": lambda: engine.amp.GradScaler(loss_scale="dynamic"),
    "loss": lambda: loss_of(small_model()),
    "dataset": dataset,
    "steps": lambda: 2,
    "tensors": lambda: (np.ones((4, 3), np.float32), np.zeros(4, np.int64)),
    "buffer_size": lambda: 4,
    "batch_size": lambda: 2,
    "count": lambda: 2,
    "fn": lambda: lambda *element: element,
    "step": lambda: 3,
    "step_fn": lambda: lambda: None,
    "closure": lambda: lambda: None,
    "system": lambda: engine.compiler.System(),
    "systems": lambda: [engine.compiler.System()],
    "num_systems": lambda: 1,
    "mode": lambda: "train",
    "parameters": lambda: 10,
    "activation_elements_per_sample": lambda: 10,
    "input_fn": lambda: lambda: [np.ones(2)],
    "dataloader": lambda: engine.executor.DataLoader(lambda: [np.ones(2)]),
    "num_steps": lambda: 2,
    "checkpoint_steps": lambda: 1,
}


# --- the calls ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiCall:
    """One callable of the public API: ``path`` names it, ``target(instance)`` returns it."""

    path: str
    target: Callable[[], Callable[..., Any]]


def _resolve(module: Any, path: str) -> Any:
    for part in path.split("."):
        module = getattr(module, part)
    return module


# instances whose methods are called: class path -> a valid instance
INSTANCES: dict[str, Callable[[], Any]] = {
    "amp.GradScaler": lambda: engine.amp.GradScaler(loss_scale="dynamic"),
    "nn.Sequential": small_model,
    "nn.Linear": lambda: engine.nn.Linear(3, 2),
    "nn.ReLU": lambda: engine.nn.ReLU(),
    "nn.Tanh": lambda: engine.nn.Tanh(),
    "nn.GELU": lambda: engine.nn.GELU(),
    "nn.Dropout": lambda: engine.nn.Dropout(0.5),
    "nn.LayerNorm": lambda: engine.nn.LayerNorm(3),
    "nn.Embedding": lambda: engine.nn.Embedding(5, 3),
    "nn.MultiHeadSelfAttention": lambda: engine.nn.MultiHeadSelfAttention(4, 2),
    "nn.TransformerBlock": lambda: engine.nn.TransformerBlock(4, 2),
    "optim.SGD": lambda: engine.optim.SGD(small_model().parameters(), lr=0.1, momentum=0.9),
    "optim.Adam": lambda: engine.optim.Adam(small_model().parameters()),
    "optim.AdamW": lambda: engine.optim.AdamW(small_model().parameters()),
    "optim.lr_scheduler.ConstantLR": lambda: engine.optim.lr_scheduler.ConstantLR(0.1),
    "optim.lr_scheduler.StepLR": lambda: engine.optim.lr_scheduler.StepLR(0.1, 3, 0.5),
    "optim.lr_scheduler.CosineDecayLR": lambda: engine.optim.lr_scheduler.CosineDecayLR(0.1, 0.01, 10),
    "data.Dataset": dataset,
    "metrics.Accuracy": lambda: engine.metrics.Accuracy(),
    "metrics.Mean": lambda: engine.metrics.Mean(),
    "runner.Runner": lambda: engine.runner.Runner(
        small_model(), engine.nn.cross_entropy, engine.optim.SGD(small_model().parameters(), lr=0.1)
    ),
    "compiler.System": lambda: engine.compiler.System(),
}


def api_calls() -> list[ApiCall]:
    """Every function, constructor and (for the classes of INSTANCES) method of the interface."""
    calls = []
    for capability in CAPABILITIES:
        for path, protocol in capability.modules.items():
            module = _resolve(engine, path)
            attributes, methods = protocol_members(protocol)
            for name in methods:
                if not name.startswith("__"):
                    calls.append(ApiCall(f"{path}.{name}", lambda m=module, n=name: getattr(m, n)))
            for name, annotation in attributes.items():
                nested = class_protocol(annotation)
                if nested is None:
                    continue
                class_path = f"{path}.{name}"
                calls.append(ApiCall(class_path, lambda m=module, n=name: getattr(m, n)))
                if class_path not in INSTANCES:
                    continue
                _nested_attributes, nested_methods = protocol_members(nested)
                for method in nested_methods:
                    if method == "__call__" or not method.startswith("__"):
                        calls.append(
                            ApiCall(
                                f"{class_path}().{method}",
                                lambda c=class_path, n=method: getattr(INSTANCES[c](), n),
                            )
                        )
    return calls


CALLS = api_calls()


@st.composite
def arguments(draw: st.DrawFn, function: Callable[..., Any]) -> tuple[list[Any], dict[str, Any], str]:
    """Arguments for ``function``: one of them junk, the others valid where a valid value is known."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return [], {}, ""
    parameters = [
        p
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and (p.default is p.empty or draw(st.booleans()))
    ]
    spoiled = draw(st.sampled_from([p.name for p in parameters] or [""]))
    positional, keywords = [], {}
    for parameter in parameters:
        known = VALID.get(parameter.name)
        value = draw(JUNK) if parameter.name == spoiled or known is None else known()
        if parameter.kind == parameter.POSITIONAL_ONLY:
            positional.append(value)
        else:
            keywords[parameter.name] = value
    return positional, keywords, spoiled


def call_once(call: ApiCall, positional: list[Any], keywords: dict[str, Any]) -> None:
    """Make the call, and iterate what it returns if that is lazy (a dataset's ``map`` calls its
    function, a DataLoader its ``input_fn``, only then); only a CsConformError (or Unsupported) may
    come out of it."""
    try:
        with _alarm(CALL_LIMIT_S):
            function = call.target()
            result = function(*positional, **keywords)
            lazy = (Iterator, engine.data.Dataset, engine.executor.DataLoader)
            if inspect.isgenerator(result) or isinstance(result, lazy):
                for _ in zip(range(3), result, strict=False):  # a generator or a dataset runs only when iterated
                    pass
    except (CsConformError, Unsupported):
        pass
    except _TimeLimit:
        pytest.fail(f"{call.path} still running after {CALL_LIMIT_S:g} s")
    finally:
        engine.reset()


@pytest.mark.parametrize("call", CALLS, ids=[call.path for call in CALLS])
def test_wrong_arguments_are_typed_refusals(call: ApiCall, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a checkpoint path drawn here is written here
    try:
        function = call.target()
    except (CsConformError, Unsupported):
        return  # building the instance is itself refused: nothing to call

    @settings(max_examples=4 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
    @given(drawn=arguments(function))
    def run(drawn: tuple[list[Any], dict[str, Any], str]) -> None:
        positional, keywords, _spoiled = drawn
        call_once(call, positional, keywords)

    with np.errstate(all="ignore"):
        run()


# --- the corpus of calls the campaign found ------------------------------------------------------------

API_CORPUS = json.loads((Path(__file__).parent / "corpus" / "engine_api" / "cases.json").read_text(encoding="utf-8"))
CALLS_BY_PATH = {call.path: call for call in CALLS}


def _decoded(value: Any) -> Any:
    """A corpus argument: JSON as is, {"junk": i} for the i-th value of junk_values(), or
    {"valid": name} for a fresh valid value of that argument name."""
    if isinstance(value, dict) and set(value) == {"junk"}:
        return junk_values()[value["junk"]]
    if isinstance(value, dict) and set(value) == {"valid"}:
        return VALID[value["valid"]]()
    return value


@pytest.mark.parametrize("entry", API_CORPUS, ids=[f"{e['call']}-{'-'.join(e['arguments'])}" for e in API_CORPUS])
def test_api_corpus_case(entry: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call once found a bare Python error (``found``); it must now return or refuse typed."""
    monkeypatch.chdir(tmp_path)
    call = CALLS_BY_PATH[entry["call"]]
    given_arguments = {name: _decoded(value) for name, value in entry["arguments"].items()}
    function = call.target()
    keywords = {
        p.name: VALID[p.name]()
        for p in inspect.signature(function).parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in given_arguments
    }
    with np.errstate(all="ignore"):
        call_once(call, [], {**keywords, **given_arguments})
