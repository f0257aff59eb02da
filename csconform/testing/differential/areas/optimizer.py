"""Optimizers: SGD, Adam and AdamW with defaults, param groups, schedules, state layout and resumes.

A program builds one optimizer over one to three parameters, given as a list or as param groups
that override some hyperparameters (or leave them to the defaults), with a number or a schedule as
``lr``; then runs updates (gradients, ``step``, ``zero_grad``, the rates it reports), may write a
scalar learning rate into a group, and may resume: a second optimizer over copies of the weights,
loaded with the first one's ``state_dict()``, updated alongside it with the same gradients.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from csconform.testing.differential.areas import Area, Context
from csconform.testing.differential.areas.lr_schedule import schedule_expression
from csconform.testing.differential.areas.values import SHAPES, branch, float32_arrays, gradients, sometimes
from csconform.testing.differential.program import Expr, call, literal

HYPERPARAMETERS: dict[str, dict[str, list[Any]]] = {
    "SGD": {
        "momentum": [0.0, 0.9, 0.5, 1.0, 1.5, -0.1],
        "weight_decay": [0.0, 0.1, 0.01, -0.1],
        "nesterov": [False, True],
    },
    "Adam": {
        "betas": [(0.9, 0.999), (0.5, 0.9), (0.0, 0.0), (0.9, 1.0), (1.0, 0.5)],
        "eps": [1e-6, 1e-8, 0.0, -1.0],
        "weight_decay": [0.0, 0.1, 0.01, -0.1],
    },
}
HYPERPARAMETERS["AdamW"] = HYPERPARAMETERS["Adam"]
RATES: list[Any] = [0.1, 0.01, 1.0, 0.0, -0.1, math.nan]


@st.composite
def learning_rate(draw: st.DrawFn, context: Context) -> Any:
    if "lr_schedule" in context.capabilities and draw(sometimes(4)):
        expression, _ = draw(schedule_expression(edges=False))
        return expression
    return draw(st.sampled_from(RATES))


@st.composite
def hyperparameters(draw: st.DrawFn, kind: str, typical: bool = False) -> dict[str, Any]:
    """Some of the optimizer's keyword arguments (the others keep their defaults)."""
    chosen = {}
    for name, options in HYPERPARAMETERS[kind].items():
        if draw(st.booleans()):
            chosen[name] = draw(st.sampled_from(options[:2] if typical else options))
    return chosen


@st.composite
def construction(draw: st.DrawFn, context: Context, kind: str, count: int) -> tuple[str, dict[str, Any]]:
    """The params argument (``[@0, @1]`` or groups, ``@`` standing for the parameters' prefix) and keywords."""
    arguments = draw(hyperparameters(kind))
    if kind == "SGD" or draw(st.booleans()):
        arguments = {"lr": draw(learning_rate(context)), **arguments}
    names = [f"@{i}" for i in range(count)]
    if count == 1 or draw(st.booleans()):
        return "[" + ", ".join(names) + "]", arguments
    split = draw(st.integers(1, count - 1))
    groups = []
    for members in (names[:split], names[split:]):
        overrides = draw(hyperparameters(kind, typical=True))
        if draw(st.booleans()):
            overrides["lr"] = draw(learning_rate(context))
        entries = [f"'params': [{', '.join(members)}]"] + [f"{literal(k)}: {literal(v)}" for k, v in overrides.items()]
        groups.append("{" + ", ".join(entries) + "}")
    return "[" + ", ".join(groups) + "]", arguments


def _update(draw: st.DrawFn, shapes: list[tuple[int, ...]], optimizers: list[tuple[str, str]]) -> list[str]:
    """Gradients for every optimizer's parameters (the same values), a step, maybe more calls."""
    lines = []
    for index, shape in enumerate(shapes):
        grad = "None" if draw(sometimes(10)) else literal(draw(gradients(shape)))
        lines += [f"{prefix}{index}.grad = {grad}" for _, prefix in optimizers]
    lines += [f"{name}.step()" for name, _ in optimizers]
    extra = draw(branch(6))
    if extra == 4:
        lines += [f"{name}.zero_grad()" for name, _ in optimizers]
    elif extra == 1:
        lines.append("opt.current_lrs()")
    elif extra == 2:
        lines.append(call("opt.lr_at", draw(st.sampled_from([0, 1, 5, 100]))))
    elif extra == 3:
        lines.append(f"opt.param_groups[0]['lr'] = {literal(draw(st.sampled_from([0.05, 0.0])))}")
    return lines


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    kind = draw(st.sampled_from(sorted(HYPERPARAMETERS)))
    shapes = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
    lines = [f"p{i} = " + call("impl.nn.Parameter", draw(float32_arrays(shape))) for i, shape in enumerate(shapes)]
    params, arguments = draw(construction(context, kind, len(shapes)))
    lines.append("opt = " + call(f"impl.optim.{kind}", Expr(params.replace("@", "p")), **arguments))
    optimizers = [("opt", "p")]
    for _ in range(draw(st.integers(1, 4))):
        lines += _update(draw, shapes, optimizers)
        if len(optimizers) == 1 and draw(sometimes(4)):
            lines.append("saved = opt.state_dict()")
            lines += [f"q{i} = impl.nn.Parameter(p{i}.data)" for i in range(len(shapes))]
            lines.append("resumed = " + call(f"impl.optim.{kind}", Expr(params.replace("@", "q")), **arguments))
            lines.append("resumed.load_state_dict(saved)")
            optimizers.append(("resumed", "q"))
    return lines


AREA = Area(
    "optimizer",
    "optimizers: defaults, param groups, schedules as learning rates, state layout, resumes",
    frozenset({"optim", "nn"}),
    statements,
)
