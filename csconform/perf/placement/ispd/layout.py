"""The ISPD solver's layout at one target time: every kernel's legal shapes, and kernels on shelves.

At a target time every kernel has a set of legal shapes (both rotations, :class:`Shapes`); kernels
in a given order go into horizontal shelves (:class:`~csconform.perf.placement.shelves.ShelfTable`),
filled alternately left-to-right and right-to-left so that neighbours in the pipeline stay close
(:func:`shelf_layout`).  Wire length: the sum, over the connectivity lines between two *kernels*, of
the L1 distance between the centres of their rectangles; ``input`` and ``output`` nodes are not
placed on the fabric (the contest gives them no shape), so lines touching them are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from csconform.perf.placement.ispd.cost import ShapeCatalogue, ceil_div, kernel_cost
from csconform.perf.placement.ispd.instance import Instance
from csconform.perf.placement.shelves import Shelf, ShelfTable


@dataclass
class Shapes:
    """Every legal shape of every kernel at one target time, both rotations, as flat arrays.

    ``narrowest[i, H]`` is the least width of kernel ``i`` under the height cap ``H`` (inf if none),
    what the shelf packing needs; :meth:`choice` names the shape a layout takes under each cap.
    """

    kernel: np.ndarray  # (S,): kernel position
    row: np.ndarray  # (S,): catalogue row
    rotated: np.ndarray  # (S,)
    placed_height: np.ndarray  # (S,)
    placed_width: np.ndarray  # (S,)
    k: np.ndarray  # (R, m): k of every catalogue row at this target
    narrowest: np.ndarray  # (n, fabric_h + 1)
    shelves: ShelfTable  # the narrowest widths, prepared for packing kernels in any order
    _choice: np.ndarray | None = None

    def choice(self) -> np.ndarray:
        """(n, fabric_h + 1): the shape a kernel takes under each height cap (-1 if none).

        The narrowest shape, then the smallest area, then the first stored (unrotated before
        rotated, grid rows ascending), so layouts are reproducible.  Among the narrowest, the smallest
        area is the lowest: the shape at the cap where the narrowest width was first reached.
        """
        if self._choice is None:
            count, caps = self.narrowest.shape
            cell = self.kernel * caps + self.placed_height
            narrowest_there = self.placed_width == self.narrowest.ravel()[cell]
            first_stored = np.full(count * caps, len(cell))
            np.minimum.at(first_stored, cell[narrowest_there], np.flatnonzero(narrowest_there))
            # the cap at which each cap's narrowest width was first reached
            narrower = self.narrowest < np.hstack([np.full((count, 1), np.inf), self.narrowest[:, :-1]])
            reached_at = np.maximum.accumulate(np.where(narrower, np.arange(caps), 0), axis=1)
            chosen = first_stored.reshape(count, caps)[np.arange(count)[:, None], reached_at]
            self._choice = np.where(np.isfinite(self.narrowest), chosen, -1)
        return self._choice


def shapes_at(catalogue: ShapeCatalogue, target: float, fabric_w: int, fabric_h: int) -> Shapes:
    valid, k, width = catalogue.shapes_for(target)
    rows = np.flatnonzero(valid)
    height = catalogue.height[rows]
    width = width[rows]
    placed_height = np.concatenate([height, width])
    placed_width = np.concatenate([width, height])
    fits = (placed_height <= fabric_h) & (placed_width <= fabric_w)
    row = np.concatenate([rows, rows])[fits]
    kernel = catalogue.kernel[row]
    placed_height, placed_width = placed_height[fits], placed_width[fits]
    count = len(catalogue.grids)
    narrowest = np.full(count * (fabric_h + 1), np.inf)
    np.minimum.at(narrowest, kernel * (fabric_h + 1) + placed_height, placed_width.astype(float))
    narrowest = np.minimum.accumulate(narrowest.reshape(count, fabric_h + 1), axis=1)
    return Shapes(
        kernel=kernel,
        row=row,
        rotated=np.concatenate([np.zeros(len(rows), bool), np.ones(len(rows), bool)])[fits],
        placed_height=placed_height,
        placed_width=placed_width,
        k=k,
        narrowest=narrowest,
        shelves=ShelfTable(narrowest, fabric_w),
    )


@dataclass
class Layout:
    """A shelf layout: per kernel (instance order) the chosen shape and its rectangle."""

    order: list[int]
    shape: np.ndarray  # index into Shapes
    x: np.ndarray
    y: np.ndarray
    width: np.ndarray
    height: np.ndarray


def shelf_layout(shapes: Shapes, order: list[int], shelves: list[Shelf], fabric_w: int) -> Layout:
    """Each kernel takes its chosen shape under its shelf's height; even shelves fill left to right,
    odd ones right to left, so the pipeline snakes through the fabric."""
    shelf_heights = np.array([shelf.height for shelf in shelves])
    lengths = np.array([shelf.stop - shelf.start for shelf in shelves])
    shelf_of_slot = np.repeat(np.arange(len(shelves)), lengths)
    kernels = np.asarray(order)
    chosen = shapes.choice()[kernels, shelf_heights[shelf_of_slot]]
    width, height = shapes.placed_width[chosen], shapes.placed_height[chosen]
    right_edge = np.cumsum(width)
    left_of_shelf = np.repeat(right_edge[lengths.cumsum() - lengths] - width[lengths.cumsum() - lengths], lengths)
    x_from_left = right_edge - width - left_of_shelf
    x = np.where(shelf_of_slot % 2 == 0, x_from_left, fabric_w - x_from_left - width)
    y = np.repeat(np.cumsum(shelf_heights) - shelf_heights, lengths)
    by_kernel = np.empty(len(order), dtype=np.int64)
    by_kernel[kernels] = np.arange(len(order))
    return Layout(
        order=list(order),
        shape=chosen[by_kernel],
        x=x[by_kernel],
        y=y[by_kernel],
        width=width[by_kernel],
        height=height[by_kernel],
    )


def layout_wirelength(layout: Layout, edges: tuple[np.ndarray, np.ndarray]) -> float:
    """:func:`~csconform.perf.placement.ispd.solution.wirelength` of a layout, from its rectangles."""
    centre_x = layout.x + layout.width / 2
    centre_y = layout.y + layout.height / 2
    a, b = edges
    return float((np.abs(centre_x[a] - centre_x[b]) + np.abs(centre_y[a] - centre_y[b])).sum())


def layout_max_time(catalogue: ShapeCatalogue, shapes: Shapes, layout: Layout) -> float:
    """The slowest kernel's time in a layout, from the catalogue (what judging candidates needs;
    the solution's own figures come from the cost model, :func:`placed_kernels`)."""
    rows = shapes.row[layout.shape]
    k_steps = ceil_div(catalogue.K[rows], shapes.k[rows])
    times = np.where(catalogue.is_convolution[rows], catalogue.steps_per_k_step[rows] * k_steps, 0.0)
    return float(times.max())


def placed_kernels(instance: Instance, catalogue: ShapeCatalogue, shapes: Shapes, layout: Layout) -> list[dict]:
    """The solution's kernels: execution parameters, rectangle, time and memory from the cost model."""
    placed = []
    for position, kernel in enumerate(instance.kernels):
        shape = int(layout.shape[position])
        row = int(shapes.row[shape])
        grid = catalogue.grids[position]
        grid_row = int(catalogue.grid_row[row])
        h, w = int(grid.h[grid_row]), int(grid.w[grid_row])
        c = [int(v) for v in grid.c[grid_row]]
        k = [int(v) for v in shapes.k[row, : len(kernel.convolutions)]]
        cost = kernel_cost(kernel, h, w, c, k)
        rotated = bool(shapes.rotated[shape])
        size = (int(cost["height"]), int(cost["width"])) if rotated else (int(cost["width"]), int(cost["height"]))
        assert size == (int(layout.width[position]), int(layout.height[position]))  # the cost model agrees
        placed.append(
            {
                "name": kernel.name,
                "type": kernel.type,
                "exec": {"h": h, "w": w, "c": c, "k": k},
                "x": int(layout.x[position]),
                "y": int(layout.y[position]),
                "rotation": 90 if rotated else 0,
                "width": size[0],
                "height": size[1],
                "time": cost["time"],
                "memory": int(cost["memory"]),
            }
        )
    return placed
