"""Checkpoints: saving and loading training states, and restoring live objects from them.

A program saves a state with ``checkpoint.save`` and loads it back with ``checkpoint.load``: a
nested mapping with the training state's sections (step, model, optimizer, grad scaler, data),
whose leaves are float32 arrays, NumPy scalars (float64, float32, int64, bool), Python numbers,
strings, None, lists and tuples; sometimes a section is missing, a key is odd (a slash in it, an
integer), or the file already exists or does not. Now and then the state is a live one: a
parameter's weights, an optimizer's global step and per-parameter state (as the runner stores them)
and a GradScaler's state, and the loaded GradScaler state is restored into a new scaler.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from csconform.testing.differential.areas import WITHOUT_PARAM_GROUPS, Area, Context
from csconform.testing.differential.areas.values import branch, float32_arrays, sometimes
from csconform.testing.differential.program import Expr, call, literal

SECTIONS = ("step", "model", "optimizer", "grad_scaler", "data")
LEAVES: list[Any] = [
    1,
    2.5,
    np.float64(1.5),
    np.float32(2.5),
    np.int64(3),
    True,
    None,
    "text",
    [1, 2.5],
    (1, 2),
    np.bool_(True),
    np.array(3.0),
    np.array([], dtype=np.float32),
    np.array([1, 2], dtype=np.int32),
    math.inf,
    -0.0,
]


@st.composite
def leaf(draw: st.DrawFn) -> Any:
    if draw(sometimes(4)):
        return draw(float32_arrays(draw(st.sampled_from([(2,), (2, 2)]))))
    return draw(st.sampled_from(LEAVES))


@st.composite
def section(draw: st.DrawFn) -> dict[Any, Any]:
    keys = draw(st.lists(st.sampled_from(["w", "b", "loss_scale", "x/y", 1]), unique=True, max_size=3))
    return {key: draw(leaf()) for key in keys}


@st.composite
def literal_state(draw: st.DrawFn) -> dict[Any, Any]:
    state: dict[Any, Any] = {name: draw(section()) for name in SECTIONS}
    state["step"] = draw(st.sampled_from([1, 0, np.int64(5)]))
    if draw(sometimes(8)):
        del state[draw(st.sampled_from(SECTIONS))]
    if draw(sometimes(6)):
        state["rng"] = draw(section())
    return state


LIVE_STATE = (
    '{"step": opt.global_step, "model": {"w": p0.data}, "optimizer": {"global_step": opt.global_step, '
    '"state": {str(k): v for k, v in opt.state_dict()["state"].items()}}, '
    '"grad_scaler": scaler.state_dict(), "data": {}}'
)
"""A training state as the runner saves one (optimizer state by parameter position, as strings)."""


def _live(draw: st.DrawFn, context: Context) -> list[str]:
    """Statements that train a little, so that a live state exists (``LIVE_STATE`` reads it)."""
    lines = ["p0 = " + call("impl.nn.Parameter", draw(float32_arrays((2,))))]
    kind = draw(st.sampled_from(["SGD", "Adam"]))
    arguments = {"lr": 0.1, "momentum": 0.9} if kind == "SGD" else {"lr": 0.1}
    lines.append("opt = " + call(f"impl.optim.{kind}", Expr("[p0]"), **arguments))
    lines.append("scaler = " + call("impl.amp.GradScaler", loss_scale="dynamic", init_scale=2.0**10))
    for _ in range(draw(st.integers(1, 2))):
        lines += [
            f"p0.grad = {literal(draw(float32_arrays((2,))) * np.float32(1024.0))}",
            "scaler.unscale_(opt)",
            "scaler.step(opt)",
            "scaler.update()",
        ]
    return lines


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    lines: list[str] = []
    live = {"amp", "nn", "optim"} <= context.capabilities and draw(sometimes(4))
    if live:
        lines += _live(draw, context)
        lines.append(f'impl.checkpoint.save(workdir / "c0", {LIVE_STATE})')
    else:
        lines.append(call("impl.checkpoint.save", Expr('workdir / "c0"'), draw(literal_state())))
    lines.append('loaded = impl.checkpoint.load(workdir / "c0")')
    if live:
        lines += [
            "restored = impl.amp.GradScaler(loss_scale='dynamic')",
            'restored.load_state_dict(loaded["grad_scaler"])',
        ]
    extra = draw(branch(4))
    if extra == 1:
        lines.append(call("impl.checkpoint.save", Expr('workdir / "c0"'), draw(literal_state())))
        lines.append('impl.checkpoint.load(workdir / "c0")')
    elif extra == 2:
        lines.append('impl.checkpoint.load(workdir / "missing")')
    return lines


AREA = Area(
    "checkpoint",
    "checkpoint round trips: nested states with NumPy and Python leaves, live optimizer and scaler states",
    frozenset({"runner"}),
    statements,
    WITHOUT_PARAM_GROUPS,
    nan_payloads=True,
)
