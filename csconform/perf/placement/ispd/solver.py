"""The ISPD 2020 solver: execution parameters and positions that minimise the slowest kernel's time.

A solution picks execution parameters for every kernel (:mod:`~csconform.perf.placement.ispd.cost`),
which fix its rectangle and its time, and places the rectangles (optionally rotated by 90 degrees)
on the fabric without overlap.  The figure of merit is the slowest kernel's time; the bounds of
:mod:`~csconform.perf.placement.ispd.bounds` say how far from optimal a solution can be.

1. **Shapes for a target time**: every kernel's legal shapes at a target, from the stacked shape
   grids of all kernels in one numpy pass (:class:`~csconform.perf.placement.ispd.cost.ShapeCatalogue`).
2. **Shelves.**  Kernels in pipeline order (a depth-first topological order of the connectivity)
   go into horizontal shelves, filled alternately left-to-right and right-to-left so that
   neighbours in the pipeline stay close.  Given every kernel's narrowest shape under each height
   cap (both rotations), :class:`~csconform.perf.placement.shelves.ShelfTable` splits the order into
   shelves of least total height (:mod:`~csconform.perf.placement.ispd.layout`).
3. **Bisection on t**: the smallest target at which the shelves of some kernel order (the
   pipeline's, by area, by height, a few random ones) fit the fabric height.  The shapes at a
   target do not depend on the order, so each step builds them once for every order.
4. **Local search**, level after level: reorder the kernels (swaps and moves) until the shelves
   fit at the next faster time; then, at the time reached, move kernels next to the ones they are
   connected to while the wires get shorter.  Both stop after a number of moves without progress
   (``patience``); the time limit (:mod:`~csconform.perf.placement.ispd.time_limit`) is only a safety net.
"""

from __future__ import annotations

import time

import numpy as np

from csconform.errors import InfeasibleError, InvalidInputError, PlacementError
from csconform.perf.placement.ispd.bounds import (
    GP_BOUND_S_PER_KERNEL,
    area_lower_bound,
    gp_lower_bound,
    shape_lower_bound,
)
from csconform.perf.placement.ispd.cost import ShapeCatalogue, ShapeGrid, least_areas, shape_grid
from csconform.perf.placement.ispd.instance import Instance, kernel_edges
from csconform.perf.placement.ispd.layout import (
    Layout,
    Shapes,
    layout_max_time,
    layout_wirelength,
    placed_kernels,
    shapes_at,
    shelf_layout,
)
from csconform.perf.placement.ispd.solution import IspdSolution
from csconform.perf.placement.ispd.time_limit import Clock
from csconform.perf.placement.shelves import Shelf, ShelfTable


def pipeline_order(instance: Instance) -> list[int]:
    """Kernel positions (into ``instance.kernels``) in a depth-first topological order of the graph.

    Depth-first keeps each chain of the network together, so the shelves keep neighbours close.
    Kernels in a cycle or unreachable keep their file order at the end.
    """
    position = {kernel.index: i for i, kernel in enumerate(instance.kernels)}
    successors: dict[int, list[int]] = {i: [] for i in position}
    indegree = dict.fromkeys(position, 0)
    for src, dst in instance.edges:
        if src in position and dst in position:
            successors[src].append(dst)
            indegree[dst] += 1
    starts = [i for i in position if indegree[i] == 0]
    stack = sorted(starts, reverse=True)
    order: list[int] = []
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt in sorted(successors[node], reverse=True):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                stack.append(nxt)
    seen = set(order)
    order += [i for i in position if i not in seen]
    return [position[i] for i in order]


def _smallest_target(
    catalogue: ShapeCatalogue,
    orders: list[list[int]],
    low: float,
    high: float,
    instance: Instance,
    clock: Clock,
    first: tuple[Shapes, list[Shelf]],
) -> tuple[Shapes, list[tuple[list[int], list[Shelf]]]]:
    """Bisect the target time down to the least at which some order's shelves fit the fabric.

    The shapes at a target do not depend on the order, so each step builds them once and tries
    every order (while the search's share of the time limit lasts). ``first`` is the shapes at
    ``high`` and the shelves of ``orders[0]`` there. Returns the shapes at the final target and
    every order that packs there (with its shelves).
    """

    def packings(shapes: Shapes, known: list[Shelf] | None = None) -> list[tuple[list[int], list[Shelf]]]:
        """Every order whose shelves fit at these shapes (``known``: those of ``orders[0]``)."""
        packed: list[tuple[list[int], list[Shelf]]] = []
        for index, order in enumerate(orders):
            if packed and not clock.allows("pack", clock.search_share):
                break
            if index == 0 and known is not None:
                shelves: list[Shelf] | None = known
            else:
                with clock.step("pack"):
                    shelves = shapes.shelves.pack(order, instance.height)
            if shelves is not None:
                packed.append((order, shelves))
        return packed

    shapes, shelves = first
    best = (shapes, packings(shapes, shelves))
    while high - low > 1e-4 * high and clock.allows("bisect", clock.search_share):
        middle = (low + high) / 2
        with clock.step("bisect"):
            shapes = shapes_at(catalogue, middle, instance.width, instance.height)
            attempt = packings(shapes)
        if attempt:
            high, best = middle, (shapes, attempt)
        else:
            low = middle
    return best


def _orders(instance: Instance, catalogue: ShapeCatalogue, target: float, count: int) -> list[list[int]]:
    """Kernel orders to try: the pipeline first (short wires), then by decreasing area and height."""
    pipeline = pipeline_order(instance)
    smallest = least_areas(catalogue, target, instance.width, instance.height)
    by_area = [int(i) for i in np.argsort(-smallest, kind="stable")]
    tallest = [float(g.height.max()) for g in catalogue.grids]
    by_height = [int(i) for i in np.argsort(-np.asarray(tallest), kind="stable")]
    rng = np.random.default_rng(2020)
    orders = [pipeline, by_area, by_height]
    orders += [[int(i) for i in rng.permutation(len(catalogue.grids))] for _ in range(max(count - len(orders), 0))]
    return orders[:count]


def _reorder_to_pack(
    shelves: ShelfTable,
    order: list[int],
    instance: Instance,
    rng: np.random.Generator,
    patience: int,
    clock: Clock,
) -> list[int] | None:
    """Local search over kernel orders for one whose shelves fit the fabric.

    At a fixed target every kernel's narrowest-shape table is fixed, so only the shelf split reruns
    per move.  Moves swap two kernels or move one elsewhere; a move is kept when the total shelf
    height does not grow.  Gives up after ``patience`` moves without a strict improvement, or when
    the search's share of the time limit is spent.
    """
    if not shelves.fits_alone:
        return None  # some kernel has no legal shape at this target
    current = list(order)
    height = shelves.total_height(current)
    stale = 0
    while height > instance.height and stale < patience and clock.allows("move", clock.search_share):
        candidate = list(current)
        first, second = (int(v) for v in rng.integers(len(candidate), size=2))
        if rng.random() < 0.5:
            candidate[first], candidate[second] = candidate[second], candidate[first]
        else:
            candidate.insert(second, candidate.pop(first))
        with clock.step("move"):
            candidate_height = shelves.total_height(candidate, height_limit=height)  # inf: taller
        stale = 0 if candidate_height < height else stale + 1
        if candidate_height <= height:
            current, height = candidate, candidate_height
    return current if height <= instance.height else None


def _polish_wires(
    shapes: Shapes,
    layout: Layout,
    instance: Instance,
    rng: np.random.Generator,
    patience: int,
    deadline: float,
) -> Layout:
    """Shorten the wires at a fixed target: move a kernel next to one it is connected to, and keep
    the move when the shelves still fit and the wire length falls."""
    edges = kernel_edges(instance)
    neighbours: dict[int, list[int]] = {i: [] for i in range(len(instance.kernels))}
    for a, b in zip(*edges, strict=True):
        neighbours[int(a)].append(int(b))
        neighbours[int(b)].append(int(a))
    wires = layout_wirelength(layout, edges)
    stale = 0
    while stale < patience and time.perf_counter() < deadline:
        stale += 1
        moved = int(rng.integers(len(layout.order)))
        if not neighbours[moved]:
            continue
        anchor = neighbours[moved][int(rng.integers(len(neighbours[moved])))]
        candidate = [k for k in layout.order if k != moved]
        candidate.insert(candidate.index(anchor) + int(rng.integers(2)), moved)
        if candidate == layout.order:
            continue  # already there
        shelves = shapes.shelves.pack(candidate, instance.height)
        if shelves is None:
            continue
        candidate_layout = shelf_layout(shapes, candidate, shelves, instance.width)
        candidate_wires = layout_wirelength(candidate_layout, edges)
        if candidate_wires < wires:
            layout, wires, stale = candidate_layout, candidate_wires, 0
    return layout


def _shape_grids(instance: Instance, clock: Clock) -> list[ShapeGrid]:
    """Every kernel's shape grid (kernels with the same type and arguments share one)."""
    longest = max(instance.width, instance.height)
    grid_of: dict[tuple, ShapeGrid] = {}
    grids = []
    for kernel in instance.kernels:
        signature = (kernel.type, tuple(sorted(kernel.args.items())))
        if signature not in grid_of:
            clock.require("enumerating the kernels' shapes")
            grid = shape_grid(kernel, instance.memlimit, longest)
            if not len(grid.h):
                raise InfeasibleError(
                    f"{instance.source}: no shape of kernel {kernel.name!r} fits the "
                    f"{instance.width} x {instance.height} fabric"
                )
            if not (grid.k_steps_for_memory >= 1).all(axis=1).any():
                raise InfeasibleError(
                    f"{instance.source}: kernel {kernel.name!r} exceeds memlimit {instance.memlimit} "
                    f"with every shape that fits the {instance.width} x {instance.height} fabric"
                )
            grid_of[signature] = grid
        grids.append(grid_of[signature])
    return grids


def solve(
    instance: Instance,
    time_limit_s: float = 60.0,
    with_gp_bound: bool = True,
    orders: int = 8,
    patience: int = 300,
    started: float | None = None,
) -> IspdSolution:
    """Choose execution parameters and positions minimising the slowest kernel's time.

    Several kernel orders are packed (pipeline order first); the fastest wins, and among equally
    fast ones the shortest wire length.  A local search over orders then tries to pack each next
    faster time level (``patience`` moves without progress end it).  The time limit, counted from
    ``started`` (a ``time.perf_counter()`` value; default: now), is honoured by every phase (see
    :class:`Clock`): when it runs out the best placement so far is returned, or, if there is none
    yet, a TimeLimitError says so.
    """
    started = time.perf_counter() if started is None else started
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) or not time_limit_s > 0:
        raise InvalidInputError(f"time limit must be a positive number of seconds, got {time_limit_s!r}")
    clock = Clock(float(time_limit_s), started, instance.source)
    catalogue = ShapeCatalogue.of(_shape_grids(instance, clock))
    clock.require("stacking the kernels' shapes")
    lower = area_lower_bound(instance)
    shape_bound = shape_lower_bound(instance, catalogue, clock)
    edges = kernel_edges(instance)
    # a target that packs in pipeline order, found by doubling; then the least target some order packs
    candidates = _orders(instance, catalogue, shape_bound * 1.1, max(orders, 1))
    fabric = (instance.width, instance.height)
    high = shape_bound
    while True:
        clock.require("looking for a time at which the kernels fit", "double")
        with clock.step("double"):
            shapes = shapes_at(catalogue, high, *fabric)
            shelves = shapes.shelves.pack(candidates[0], instance.height)
        if shelves is not None:
            break
        high *= 1.25
        if high > 1e18:
            raise InfeasibleError(f"{instance.source}: the kernels do not fit the fabric at any time")
    shapes, packed = _smallest_target(catalogue, candidates, shape_bound, high, instance, clock, (shapes, shelves))
    best: tuple[float, float, Layout, Shapes] | None = None  # max_time, wires, layout, shapes

    def judged(layout: Layout, shapes: Shapes) -> tuple[float, float, Layout, Shapes]:
        return layout_max_time(catalogue, shapes, layout), layout_wirelength(layout, edges), layout, shapes

    for order, shelves in packed:
        candidate = judged(shelf_layout(shapes, order, shelves, instance.width), shapes)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    assert best is not None  # _smallest_target returns at least one packing order
    # then local search: look for an order that packs strictly faster, level after level
    rng = np.random.default_rng(2020)
    while clock.allows("bisect", clock.search_share):
        shapes = shapes_at(catalogue, best[0] * (1 - 1e-9), instance.width, instance.height)
        reordered = _reorder_to_pack(shapes.shelves, best[2].order, instance, rng, patience, clock)
        if reordered is None:
            break
        packing = shapes.shelves.pack(reordered, instance.height)
        assert packing is not None  # the search only returns orders that pack
        best = judged(shelf_layout(shapes, reordered, packing, instance.width), shapes)
    # last, shorten the wires without giving up any speed: only shapes as fast as the best are allowed
    if not clock.expired(clock.polish_share):
        shapes = shapes_at(catalogue, best[0], instance.width, instance.height)
        packing = shapes.shelves.pack(best[2].order, instance.height)
        if packing is not None:
            start = shelf_layout(shapes, best[2].order, packing, instance.width)
            polished = _polish_wires(shapes, start, instance, rng, patience // 3, started + time_limit_s * 0.8)
            candidate = judged(polished, shapes)
            if candidate[1] < best[1]:
                best = candidate
    _, wires, layout, shapes = best
    kernels = placed_kernels(instance, catalogue, shapes, layout)
    gp_bound = None
    remaining = clock.remaining(0.9)
    if with_gp_bound and remaining > 1.0 + GP_BOUND_S_PER_KERNEL * len(instance.kernels):
        try:
            gp_bound = gp_lower_bound(instance, time_limit_s=remaining)
        except PlacementError:
            gp_bound = None  # an auxiliary figure: the placement stands without it
    return IspdSolution(
        instance=instance,
        kernels=kernels,
        max_time=max(k["time"] for k in kernels),
        lower_bound=lower,
        wirelength=wires,
        solve_s=time.perf_counter() - started,
        gp_lower_bound=gp_bound,
        shape_lower_bound=shape_bound,
        orders_tried=len(candidates),
    )
