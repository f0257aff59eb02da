"""The ISPD 2020 cost model: a kernel's shape, time and memory at its execution parameters, and the
shapes worth trying.

A solution picks execution parameters (``h, w`` shared by a kernel, one ``c, k`` per convolution),
which fix the kernel's rectangle and its time (the README's formulas, :func:`kernel_cost`).  For
every kernel a grid of candidate ``(h, w, c_max)`` is enumerated once (:func:`shape_grid`): only the
values where a ceiling changes matter (``h = ceil(H/q)`` for q = 1..H, the same for ``w`` and ``c``),
and only shapes that fit the fabric.  Each convolution of the kernel takes ``c_i = min(c_max, C_i)``
(a larger ``c`` never hurts time or memory and the height is set by ``c_max`` anyway); for a target
time ``t`` the narrowest ``k_i`` meeting both the time and the memory limit follows in closed form.
The grids of all kernels are stacked in one :class:`ShapeCatalogue`, so a target is one numpy pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from csconform.perf.placement.ispd.instance import Convolution, Kernel


def ceil_div(numerator: np.ndarray | int, denominator: np.ndarray | int) -> np.ndarray:
    return -(-np.asarray(numerator) // np.asarray(denominator))


def convolution_cost(conv: Convolution, h: int, w: int, c: int, k: int) -> dict[str, float]:
    """The README's formulas for one convolution at execution parameters (h, w, c, k), unrotated."""
    time_cycles = (
        int(ceil_div(conv.H, h) * ceil_div(conv.W, w) * ceil_div(conv.C, c) * ceil_div(conv.K, k))
        * conv.R
        * conv.S
        / (conv.T * conv.U)
    )
    memory_words = int(
        ceil_div(conv.C, c) * ceil_div(conv.K, k) * conv.R * conv.S
        + ceil_div(conv.W + conv.S - 1, w) * ceil_div(conv.H + conv.R - 1, h) * ceil_div(conv.K, k)
    )
    return {"height": h * w * (c + 1), "width": 3 * k, "time": time_cycles, "memory": memory_words}


def kernel_cost(kernel: Kernel, h: int, w: int, c: Sequence[int], k: Sequence[int]) -> dict[str, float]:
    """A kernel's (unrotated) height, width, time and memory: max height, summed width, max time/memory."""
    parts = [convolution_cost(conv, h, w, ci, ki) for conv, ci, ki in zip(kernel.convolutions, c, k, strict=True)]
    return {
        "height": max(p["height"] for p in parts),
        "width": sum(p["width"] for p in parts),
        "time": max(p["time"] for p in parts),
        "memory": max(p["memory"] for p in parts),
    }


def _useful_values(totals: Sequence[int], cap: int) -> np.ndarray:
    """Values v <= cap at which some ceil(total / v) changes: the values ceil(total / q) takes.

    v is one of them exactly when q = ceil(total / v) gives it back (ceil(total / q) == v), so only
    the candidates up to ``cap`` (the fabric's side) are tried, whatever the size of ``total``.
    """
    values: set[int] = set()
    for total in totals:
        candidates = np.arange(1, min(cap, total) + 1, dtype=np.int64)
        attained = ceil_div(total, ceil_div(total, candidates)) == candidates
        values.update(int(v) for v in candidates[attained])
    return np.array(sorted(values), dtype=np.int64)


@dataclass
class ShapeGrid:
    """Candidate (h, w, c_max) of one kernel, with everything that does not depend on k."""

    h: np.ndarray  # (G,)
    w: np.ndarray  # (G,)
    c: np.ndarray  # (G, n_conv): c_i = min(c_max, C_i)
    height: np.ndarray  # (G,): h * w * (c_max + 1)
    steps_per_k_step: np.ndarray  # (G, n_conv): time / ceil(K/k)
    k_steps_for_memory: np.ndarray  # (G, n_conv): largest ceil(K/k) the memory limit allows
    K: np.ndarray  # (n_conv,)

    def shapes_for(self, target_time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Narrowest k per convolution meeting ``target_time``: (valid mask, k (G, n_conv), width (G,))."""
        by_time = np.floor(target_time / self.steps_per_k_step * (1 + 1e-12))
        k_steps = np.minimum(np.minimum(by_time, self.k_steps_for_memory), self.K)
        valid = (k_steps >= 1).all(axis=1)
        k = ceil_div(self.K, np.maximum(k_steps, 1).astype(np.int64))
        return valid, k, 3 * k.sum(axis=1)


def shape_grid(kernel: Kernel, memlimit: int, longest_side: int) -> ShapeGrid:
    """Enumerate the (h, w, c_max) worth trying for a kernel whose sides may not exceed ``longest_side``."""
    convs = kernel.convolutions
    cap_hw = max(longest_side // 2, 1)
    hs = _useful_values([cv.H for cv in convs], cap_hw)
    ws = _useful_values([cv.W for cv in convs], cap_hw)
    cs = _useful_values([cv.C for cv in convs], longest_side)
    hh, ww = np.meshgrid(hs, ws, indexing="ij")
    hh, ww = hh.ravel(), ww.ravel()
    keep = hh * ww * 2 <= longest_side
    hh, ww = hh[keep], ww[keep]
    # every (h, w) with every c_max whose height fits
    hh3 = np.repeat(hh, len(cs))
    ww3 = np.repeat(ww, len(cs))
    cc3 = np.tile(cs, len(hh))
    keep = hh3 * ww3 * (cc3 + 1) <= longest_side
    hh3, ww3, cc3 = hh3[keep], ww3[keep], cc3[keep]
    if not len(hh3):  # no shape fits a side this short: an empty grid (the solver names the kernel)
        empty = np.zeros((0, len(convs)))
        none = np.zeros(0, dtype=np.int64)
        return ShapeGrid(none, none, empty.astype(np.int64), none, empty, empty, np.array([cv.K for cv in convs]))
    big = {key: np.array([getattr(cv, key) for cv in convs]) for key in ("H", "W", "R", "S", "C", "K", "T", "U")}
    c = np.minimum(cc3[:, None], big["C"][None, :])
    c_steps = ceil_div(big["C"][None, :], c)
    image_steps = ceil_div(big["H"][None, :], hh3[:, None]) * ceil_div(big["W"][None, :], ww3[:, None])
    steps = image_steps * c_steps * big["R"] * big["S"] / (big["T"] * big["U"])
    halo = ceil_div(big["W"][None, :] + big["S"] - 1, ww3[:, None]) * ceil_div(
        big["H"][None, :] + big["R"] - 1, hh3[:, None]
    )
    per_k_step_words = c_steps * big["R"] * big["S"] + halo
    height = hh3 * ww3 * (cc3 + 1)
    steps = steps.astype(float)
    k_steps_for_memory = (memlimit // per_k_step_words).astype(float)
    # rows with the same steps and memory allowance take the same k and time at every target: only
    # the lowest (the first stored among equals) can ever be chosen, so the others are dropped
    profile = np.hstack([steps, k_steps_for_memory])
    grouped = np.lexsort((np.arange(len(height)), height, *profile.T))  # by profile, then lowest first
    new_profile = np.r_[True, (np.diff(profile[grouped], axis=0) != 0).any(axis=1)]
    kept = np.sort(grouped[new_profile])
    return ShapeGrid(
        h=hh3[kept],
        w=ww3[kept],
        c=c[kept],
        height=height[kept],
        steps_per_k_step=steps[kept],
        k_steps_for_memory=k_steps_for_memory[kept],
        K=big["K"],
    )


@dataclass
class ShapeCatalogue:
    """The shape grids of every kernel stacked into one table, so one numpy pass serves all kernels.

    Rows are grouped by kernel, in kernel order, each in its grid's order; there is one column per
    convolution, and kernels with fewer convolutions are padded with columns that cost nothing.
    """

    grids: list[ShapeGrid]
    kernel: np.ndarray  # (R,): position of the row's kernel in instance.kernels
    grid_row: np.ndarray  # (R,): the row in that kernel's grid
    height: np.ndarray  # (R,)
    steps_per_k_step: np.ndarray  # (R, m); 1 in padding
    k_steps_for_memory: np.ndarray  # (R, m); 1 in padding
    K: np.ndarray  # (R, m); 1 in padding
    is_convolution: np.ndarray  # (R, m): False in padding

    @classmethod
    def of(cls, grids: list[ShapeGrid]) -> ShapeCatalogue:
        columns = max(len(grid.K) for grid in grids)
        padded: dict[int, tuple[np.ndarray, ...]] = {}  # kernels of one signature share their grid object

        def pad(values: np.ndarray, padding: float) -> np.ndarray:
            return np.pad(values, ((0, 0), (0, columns - values.shape[1])), constant_values=padding)

        for grid in grids:
            if id(grid) not in padded:
                padded[id(grid)] = (
                    pad(grid.steps_per_k_step, 1.0),
                    pad(grid.k_steps_for_memory, 1.0),
                    pad(np.broadcast_to(grid.K, (len(grid.h), len(grid.K))), 1),
                    pad(np.ones((len(grid.h), len(grid.K)), bool), False),
                )

        def stacked(part: int) -> np.ndarray:
            return np.concatenate([padded[id(grid)][part] for grid in grids])

        sizes = [len(grid.h) for grid in grids]
        return cls(
            grids=grids,
            kernel=np.repeat(np.arange(len(grids)), sizes),
            grid_row=np.concatenate([np.arange(size) for size in sizes]),
            height=np.concatenate([grid.height for grid in grids]),
            steps_per_k_step=stacked(0),
            k_steps_for_memory=stacked(1),
            K=stacked(2),
            is_convolution=stacked(3),
        )

    def shapes_for(self, target_time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`ShapeGrid.shapes_for` of every row: (valid (R,), k (R, m), width (R,))."""
        by_time = np.floor(target_time / self.steps_per_k_step * (1 + 1e-12))
        k_steps = np.minimum(np.minimum(by_time, self.k_steps_for_memory), self.K)
        k_steps = np.where(self.is_convolution, k_steps, 1.0)
        valid = np.asarray((k_steps >= 1).all(axis=1))
        k = ceil_div(self.K, np.maximum(k_steps, 1).astype(np.int64))
        return valid, k, 3 * np.where(self.is_convolution, k, 0).sum(axis=1)


def least_areas(catalogue: ShapeCatalogue, target: float, fabric_w: int, fabric_h: int) -> np.ndarray:
    """Least area of a legal shape (either rotation fits) of every kernel at ``target`` (inf if none)."""
    valid, _, width = catalogue.shapes_for(target)
    height = catalogue.height
    fits = ((height <= fabric_h) & (width <= fabric_w)) | ((width <= fabric_h) & (height <= fabric_w))
    areas = np.full(len(catalogue.grids), np.inf)
    usable = valid & fits
    np.minimum.at(areas, catalogue.kernel[usable], (height[usable] * width[usable]).astype(float))
    return areas
