"""Independent placement checker.

Written apart from the optimizers on purpose (it shares no code with
:mod:`~csconform.perf.placement.columns`, :mod:`~csconform.perf.placement.legalise` or
:mod:`~csconform.perf.placement.ispd`): it paints every rectangle onto a grid of the fabric and
counts, instead of reasoning about how the layout was built.  Every placement in the tests goes
through it, and so does every ISPD 2020 solution, whose kernel shapes, times and memory it recomputes from
the README's cost model in plain integer arithmetic.

:func:`placement_violations` / :func:`ispd_violations` return a list of human-readable violations
(empty = legal); :func:`assert_legal` raises :class:`~csconform.errors.PlacementError` with all of
them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from csconform.errors import PlacementError


class RectLike(Protocol):
    name: str
    x: int
    y: int
    width: int
    height: int


def _is_integer(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def placement_violations(
    rects: Sequence[RectLike],
    fabric_width: int,
    fabric_height: int,
    memory_per_core: float | None = None,
    memory: Sequence[float] | None = None,
) -> list[str]:
    """Every way the rectangles break the rules: integers, inside the fabric, disjoint, memory."""
    problems: list[str] = []
    occupancy = np.zeros((fabric_height, fabric_width), dtype=np.int32)
    for index, rect in enumerate(rects):
        label = f"rect {index} ({rect.name!r})"
        fields = (rect.x, rect.y, rect.width, rect.height)
        if not all(_is_integer(v) for v in fields):
            problems.append(f"{label}: non-integer position or size {fields}")
            continue
        if rect.width < 1 or rect.height < 1:
            problems.append(f"{label}: empty rectangle {rect.width} x {rect.height}")
            continue
        if rect.x < 0 or rect.y < 0 or rect.x + rect.width > fabric_width or rect.y + rect.height > fabric_height:
            problems.append(
                f"{label}: [{rect.x}, {rect.x + rect.width}) x [{rect.y}, {rect.y + rect.height}) "
                f"leaves the {fabric_width} x {fabric_height} fabric"
            )
            continue
        occupancy[rect.y : rect.y + rect.height, rect.x : rect.x + rect.width] += 1
        if memory is not None and memory_per_core is not None:
            per_core = memory[index] / (rect.width * rect.height)
            if per_core > memory_per_core * (1 + 1e-12):
                problems.append(f"{label}: {per_core:.6g} bytes per core exceeds {memory_per_core}")
    overlapping = int((occupancy > 1).sum())
    if overlapping:
        rows, cols = np.nonzero(occupancy > 1)
        problems.append(f"{overlapping} cores are covered more than once (first at x={cols[0]}, y={rows[0]})")
    return problems


def assert_legal(violations: list[str]) -> None:
    """Raise PlacementError listing every violation, if there is any."""
    if violations:
        raise PlacementError("illegal placement: " + "; ".join(violations[:10]))


# --- ISPD 2020 ------------------------------------------------------------------------------------


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _convolutions(kernel: Mapping[str, Any]) -> list[tuple[int, ...]]:
    """(H, W, R, S, C, K, T, U) of each convolution of a kernel, as the README lists them."""
    args = kernel["args"]
    if kernel["type"] == "conv":
        return [tuple(args[key] for key in ("H", "W", "R", "S", "C", "K", "T", "U"))]
    f, h, w = args["f"], args["h"], args["w"]
    if kernel["type"] == "dblock":
        return [(h, w, 1, 1, f, f // 4, 1, 1), (h, w, 3, 3, f // 4, f // 4, 1, 1), (h, w, 1, 1, f // 4, f, 1, 1)]
    return [
        (h, w, 1, 1, f // 2, f // 4, 1, 1),
        (h, w, 3, 3, f // 4, f // 4, 2, 2),
        (h // 2, w // 2, 1, 1, f // 4, f, 1, 1),
        (h, w, 1, 1, f // 2, f, 2, 2),
    ]


def ispd_kernel_cost(kernel: Mapping[str, Any], h: int, w: int, c: Sequence[int], k: Sequence[int]) -> dict:
    """Unrotated height, width, time and memory of a kernel at the given execution parameters."""
    heights, widths, times, memories = [], [], [], []
    for (big_h, big_w, r, s, big_c, big_k, t, u), ci, ki in zip(_convolutions(kernel), c, k, strict=True):
        heights.append(h * w * (ci + 1))
        widths.append(3 * ki)
        steps = _ceil_div(big_h, h) * _ceil_div(big_w, w) * _ceil_div(big_c, ci) * _ceil_div(big_k, ki)
        times.append(steps * r * s / (t * u))
        memories.append(
            _ceil_div(big_c, ci) * _ceil_div(big_k, ki) * r * s
            + _ceil_div(big_w + s - 1, w) * _ceil_div(big_h + r - 1, h) * _ceil_div(big_k, ki)
        )
    return {"height": max(heights), "width": sum(widths), "time": max(times), "memory": max(memories)}


def ispd_area_bound(kernels: Sequence[Mapping[str, Any]], width: int, height: int) -> float:
    """The README's lower bound on the slowest kernel's time: every convolution needs an area of at
    least 3 H W C K R S / (T U t) at time t, and all of them share the width x height fabric."""
    total = sum(
        3 * big_h * big_w * big_c * big_k * r * s / (t * u)
        for kernel in kernels
        for big_h, big_w, r, s, big_c, big_k, t, u in _convolutions(kernel)
    )
    return total / (width * height)


def ispd_violations(
    kernels: Sequence[Mapping[str, Any]], solution: Mapping[str, Any], width: int, height: int, memlimit: int
) -> list[str]:
    """Check an ISPD solution (the JSON dict) against the instance's kernels (name, type, args).

    Recomputes every kernel's shape, time and memory from its execution parameters, then checks
    bounds and overlap on the grid, the memory limit, and the reported max_time.
    """
    problems: list[str] = []
    placed = {entry["name"]: entry for entry in solution["kernels"]}
    if set(placed) != {kernel["name"] for kernel in kernels} or len(placed) != len(solution["kernels"]):
        problems.append("the solution does not place every kernel exactly once")
        return problems

    class _Box:
        def __init__(self, name: str, x: int, y: int, width: int, height: int) -> None:
            self.name, self.x, self.y, self.width, self.height = name, x, y, width, height

    boxes = []
    slowest = 0.0
    for kernel in kernels:
        entry = placed[kernel["name"]]
        parameters = entry["exec"]
        values = [parameters["h"], parameters["w"], *parameters["c"], *parameters["k"]]
        if not all(_is_integer(v) and v >= 1 for v in values):
            problems.append(f"{kernel['name']}: execution parameters must be integers >= 1, got {parameters}")
            continue
        if len(parameters["c"]) != len(_convolutions(kernel)) or len(parameters["k"]) != len(parameters["c"]):
            problems.append(f"{kernel['name']}: needs one c and one k per convolution")
            continue
        cost = ispd_kernel_cost(kernel, parameters["h"], parameters["w"], parameters["c"], parameters["k"])
        if entry["rotation"] not in (0, 90):
            problems.append(f"{kernel['name']}: rotation {entry['rotation']} is not 0 or 90")
            continue
        box_w, box_h = (cost["width"], cost["height"]) if entry["rotation"] == 0 else (cost["height"], cost["width"])
        if (entry["width"], entry["height"]) != (box_w, box_h):
            reported = f"{entry['width']} x {entry['height']}"
            problems.append(f"{kernel['name']}: reported size {reported} != {box_w} x {box_h}")
        if not math.isclose(entry["time"], cost["time"]) or entry["memory"] != cost["memory"]:
            problems.append(f"{kernel['name']}: reported time/memory differ from the cost model")
        if cost["memory"] > memlimit:
            problems.append(f"{kernel['name']}: memory {cost['memory']} exceeds memlimit {memlimit}")
        slowest = max(slowest, cost["time"])
        boxes.append(_Box(kernel["name"], entry["x"], entry["y"], box_w, box_h))
    problems += placement_violations(boxes, width, height)
    if not math.isclose(solution["max_time"], slowest):
        problems.append(f"max_time {solution['max_time']} but the slowest kernel takes {slowest}")
    return problems
