"""The GradScaler protocol: configurations, whole iterations, and orders the documents forbid.

A program builds one or two parameters, an SGD optimizer and a GradScaler (usually in that order,
now and then the scaler first), then runs iterations. Gradients are set directly on the parameters
(the interface treats them as this iteration's scaled gradients), sometimes with an inf or NaN.
An iteration is the documented one (``unscale_``, ``step``, ``update``), a variation of it (a part left
out or repeated), or any sequence of protocol calls: ``scale``, ``unscale_``, ``step``, ``step_if_finite``,
``clip_gradients_and_return_isfinite``, ``update`` with or without a scale, ``get_scale``,
``state_dict``/``load_state_dict``, the optimizer's own ``step`` and ``zero_grad``.

Configurations are the reachable ranges of :mod:`csconform.testing.strategies`, static scales, and
constructors given only some arguments, scales that are no powers of two, or edge values (0,
negatives, infinities, NaN).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from csconform.testing.differential.areas import WITHOUT_PARAM_GROUPS, Area, Context
from csconform.testing.differential.areas.values import branch, gradients, parameters, sometimes
from csconform.testing.differential.program import Expr, call, literal
from csconform.testing.strategies import dynamic_grad_scaler_configs, static_grad_scaler_configs

EDGE_ARGUMENTS: dict[str, list[Any]] = {
    "init_scale": [2.0**20, 1.0, 0.3, 2.0**-20, 0.0, -1.0, math.inf],
    "steps_per_increase": [1, 2, 0, 2000, -1, 1.5],
    "min_loss_scale": [1.0, 2.0**-14, 0.1, 2.0**-15, 0.0, 2.0**10],
    "max_loss_scale": [2.0**20, 2.0**15, 0.7, 1.0, 0.0, 2.0**40, math.inf],
    "overflow_tolerance": [0.5, 0.0, 1.0, -0.1, math.nan],
    "max_gradient_norm": [1.0, 1e-3, 0.0, -1.0],
}
LOSS_SCALES: list[Any] = ["dynamic", None, 1.0, 128.0, 0, -1.0, "static", math.inf, math.nan]


@st.composite
def scaler_arguments(draw: st.DrawFn) -> dict[str, Any]:
    """Keyword arguments of a GradScaler: a reachable dynamic range, a static scale, a dynamic scaler
    given one argument only (as a new user writes it), or a mix of edge values."""
    choice = draw(branch(4))
    if choice == 0:
        return draw(dynamic_grad_scaler_configs(max_steps_per_increase=3, min_steps_per_increase=1))
    if choice == 1:
        return draw(static_grad_scaler_configs())
    if choice == 2:
        name = draw(st.sampled_from(sorted(EDGE_ARGUMENTS)))
        return {"loss_scale": "dynamic", name: draw(st.sampled_from(EDGE_ARGUMENTS[name]))}
    loss_scale = "dynamic" if draw(st.booleans()) else draw(st.sampled_from(LOSS_SCALES))
    arguments: dict[str, Any] = {"loss_scale": loss_scale}
    for name in draw(st.lists(st.sampled_from(sorted(EDGE_ARGUMENTS)), unique=True, max_size=3)):
        arguments[name] = draw(st.sampled_from(EDGE_ARGUMENTS[name]))
    return arguments


@st.composite
def scaler_state(draw: st.DrawFn) -> dict[str, Any]:
    """A state dict to load: a dynamic scaler's, a static one's, with keys missing or odd values."""
    state: dict[str, Any] = {"loss_scale": draw(st.sampled_from([1024.0, 1.0, 2.0**15, 0.5, -1.0]))}
    if draw(st.booleans()):
        state["steps_since_rescale"] = draw(st.sampled_from([0, 1, 3, -1]))
        state["overflows_since_rescale"] = draw(st.sampled_from([0, 1, 5]))
        if draw(st.booleans()):
            state["num_skipped_steps"] = draw(st.sampled_from([0, 2]))
    return state


def _set_gradients(draw: st.DrawFn, shapes: list[tuple[int, ...]], scale_exponents: tuple[int, int]) -> list[str]:
    lines = []
    for index, shape in enumerate(shapes):
        if draw(sometimes(8)):
            lines.append(f"p{index}.grad = None")
        else:
            lines.append(f"p{index}.grad = {literal(draw(gradients(shape, scale_exponents)))}")
    return lines


@st.composite
def protocol_call(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> list[str]:
    """One call of the protocol, in any order the program likes."""
    choice = draw(branch(13))
    if choice == 0:
        return ["scaler.unscale_(opt)"]
    if choice == 1:
        return ["scaler.step(opt)"]
    if choice == 2:
        return ["scaler.update()"]
    if choice == 3:
        return ["scaler.step_if_finite(opt)"]
    if choice == 4:
        return [f"scaler.clip_gradients_and_return_isfinite({draw(st.sampled_from(['[opt]', 'opt']))})"]
    if choice == 5:
        return [call("scaler.update", draw(st.sampled_from([0.0, None, 1.0, 2.0, 65536.0])))]
    if choice == 6:
        return [call("scaler.scale", draw(st.sampled_from([1.0, 0.5, 3.0, 1e30])))]
    if choice == 7:
        return ["scaler.get_scale()"]
    if choice == 8:
        return ["scaler.state_dict()"]
    if choice == 9:
        return [call("scaler.load_state_dict", draw(scaler_state()))]
    if choice == 10:
        return ["opt.step()"]
    if choice == 11:
        return ["opt.zero_grad()"]
    return _set_gradients(draw, shapes, (0, 16))


STEPS = ("scaler.step(opt)", "scaler.step_if_finite(opt)", "opt.step()")


@st.composite
def iteration(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> list[str]:
    """One iteration: the documented one, a variation of it, or any sequence of protocol calls.

    A variation keeps the documented order but may leave out or repeat a part: unscale_ or not,
    clip_gradients_and_return_isfinite or not, one or two stepping calls (step, step_if_finite, the
    optimizer's own step), a second unscale_, update with or without a scale.
    """
    lines = _set_gradients(draw, shapes, (0, 16))
    kind = draw(branch(3))
    if kind == 0:
        if draw(st.booleans()):
            lines.append("scaler.unscale_(opt)")
        return [*lines, "scaler.step(opt)", "scaler.update()"]
    if kind == 1:
        if not draw(sometimes(4)):
            lines.append("scaler.unscale_(opt)")
        if draw(st.booleans()):
            lines.append("scaler.clip_gradients_and_return_isfinite([opt])")
        lines += draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=2))
        if draw(sometimes(5)):
            lines.append("scaler.unscale_(opt)")
        if not draw(sometimes(5)):
            lines.append(call("scaler.update", *draw(st.sampled_from([(), (0.0,), (None,), (2.0,)]))))
        return lines
    for calls in draw(st.lists(protocol_call(shapes), min_size=1, max_size=6)):
        lines += calls
    return lines


@st.composite
def statements(draw: st.DrawFn, context: Context) -> list[str]:
    lines, shapes = draw(parameters())
    params = Expr("[" + ", ".join(f"p{i}" for i in range(len(shapes))) + "]")
    sgd = {"lr": draw(st.sampled_from([0.5, 0.1, 1.0]))}
    if draw(st.booleans()):
        sgd["momentum"] = 0.9
    optimizer = "opt = " + call("impl.optim.SGD", params, **sgd)
    scaler = "scaler = " + call("impl.amp.GradScaler", **draw(scaler_arguments()))
    lines += [scaler, optimizer] if draw(sometimes(10)) else [optimizer, scaler]
    for statements in draw(st.lists(iteration(shapes), min_size=1, max_size=3)):
        lines += statements
    return lines


AREA = Area(
    "grad_scaler",
    "GradScaler protocol: static and dynamic scaling, iterations in documented and forbidden orders",
    frozenset({"amp", "nn", "optim"}),
    statements,
    WITHOUT_PARAM_GROUPS,
)
