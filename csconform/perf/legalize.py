"""Integer legalisation: turn continuous region sizes into whole cores on the grid.

Two layouts are legalised here, both with the relative order of the kernels fixed in advance so
that the integer problem stays a one-dimensional search:

* **columns** (used by :func:`csconform.perf.placement.place_kernels`): kernels in pipeline order
  are split into consecutive columns; a column has one integer width and every kernel in it an
  integer number of rows.  For a target time the smallest width of each column follows from a
  monotone search, so a bisection on the target time finds the best integer layout of that
  partition exactly (up to a relative tolerance).
* **shelves** (used by the ISPD 2020 solver): kernels in pipeline order are split into consecutive
  horizontal shelves; a dynamic program picks the split that needs the least total height, given
  for every kernel the narrowest legal shape under each height cap.

Both return layouts that the independent checker (:mod:`csconform.perf.check`) validates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Relative tolerance of the bisections on the target time.
RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ColumnLayout:
    """An integer column layout: one width per column and one row count per kernel."""

    column_widths: np.ndarray  # cores, one per column
    rows: np.ndarray  # cores, one per kernel (in kernel order)
    cycles_per_sample: np.ndarray  # achieved, one per kernel


def rows_needed(
    work_cycles: np.ndarray, floor_cores: np.ndarray, column_width: int, target_cycles: float
) -> np.ndarray:
    """Rows each kernel needs in a column ``column_width`` cores wide to finish within the target.

    A kernel needs at least ``floor_cores`` cores (memory and ``min_cores``) and enough cores that
    ``work / cores <= target``; both round up to whole rows, and never fewer than one row.
    """
    if target_cycles > 0:
        for_time = np.ceil(work_cycles / (column_width * target_cycles) * (1 - RELATIVE_TOLERANCE))
    else:
        for_time = np.where(work_cycles > 0, np.inf, 0.0)
    for_floor = np.ceil(floor_cores / column_width)
    return np.maximum(np.maximum(for_time, for_floor), 1.0)


def narrowest_column(
    work_cycles: np.ndarray, floor_cores: np.ndarray, fabric_width: int, fabric_height: int, target: float
) -> int | None:
    """Smallest integer width at which a column's kernels fit its height at ``target``; None if none."""
    if rows_needed(work_cycles, floor_cores, fabric_width, target).sum() > fabric_height:
        return None
    low, high = 1, fabric_width  # high always fits
    while low < high:
        middle = (low + high) // 2
        if rows_needed(work_cycles, floor_cores, middle, target).sum() <= fabric_height:
            high = middle
        else:
            low = middle + 1
    return high


def _column_widths(
    work_cycles: np.ndarray,
    floor_cores: np.ndarray,
    columns: list[np.ndarray],
    fabric_width: int,
    fabric_height: int,
    target: float,
) -> list[int] | None:
    """Narrowest width of every column at ``target``, or None when they cannot share the fabric."""
    widths: list[int] = []
    for members in columns:
        width = narrowest_column(work_cycles[members], floor_cores[members], fabric_width, fabric_height, target)
        if width is None:
            return None
        widths.append(width)
        if sum(widths) > fabric_width:
            return None
    return widths


def legalise_columns(
    work_cycles: np.ndarray,
    floor_cores: np.ndarray,
    columns: list[np.ndarray],
    fabric_width: int,
    fabric_height: int,
    lower_bound_cycles: float,
) -> ColumnLayout | None:
    """Best integer layout of a fixed column partition, or None if the partition cannot fit at all.

    ``lower_bound_cycles`` (the continuous optimum of the same partition) starts the bisection:
    no integer layout can be faster.
    """
    work_cycles = np.asarray(work_cycles, dtype=float)
    floor_cores = np.asarray(floor_cores, dtype=float)
    slowest_possible = float(work_cycles.max())  # every kernel on a single core
    high = max(slowest_possible, lower_bound_cycles) * (1 + 1e-6)
    if _column_widths(work_cycles, floor_cores, columns, fabric_width, fabric_height, high) is None:
        return None
    low = max(lower_bound_cycles * (1 - 1e-6), 0.0)
    if slowest_possible == 0.0:
        high = 0.0
    for _ in range(200):  # bisection, capped
        if high - low <= RELATIVE_TOLERANCE * high:
            break
        middle = (low + high) / 2
        if _column_widths(work_cycles, floor_cores, columns, fabric_width, fabric_height, middle) is None:
            low = middle
        else:
            high = middle
    widths = _column_widths(work_cycles, floor_cores, columns, fabric_width, fabric_height, high)
    assert widths is not None  # high is feasible by construction of the bisection
    rows = np.zeros(len(work_cycles))
    width_of_kernel = np.zeros(len(work_cycles))
    for members, width in zip(columns, widths, strict=True):
        rows[members] = rows_needed(work_cycles[members], floor_cores[members], width, high)
        width_of_kernel[members] = width
    cores = rows * width_of_kernel
    return ColumnLayout(
        column_widths=np.asarray(widths, dtype=int),
        rows=rows.astype(int),
        cycles_per_sample=work_cycles / cores,
    )


# --- shelves ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shelf:
    """Kernels ``start`` to ``stop - 1`` (pipeline order) side by side in one horizontal band."""

    start: int
    stop: int
    height: int


def _shelf_program(min_width: np.ndarray, fabric_width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The dynamic program behind :func:`pack_shelves`: least total height of kernels 0..j-1, for every j.

    Returns (best_height, previous split, shelf height), or None when some kernel fits no shelf alone.
    """
    count = len(min_width)
    # any width beyond the fabric is as bad as "no shape": clip so that sums stay finite
    clipped = np.minimum(min_width, fabric_width + 1.0)
    if (clipped[:, -1] > fabric_width).any():
        return None  # a kernel fits no shelf on its own
    cumulative = np.vstack([np.zeros((1, clipped.shape[1])), np.cumsum(clipped, axis=0)])
    best_height = np.full(count + 1, np.inf)
    best_height[0] = 0.0
    previous = np.zeros(count + 1, dtype=int)
    shelf_height = np.full(count + 1, 0, dtype=int)
    for start in range(count):
        # total width of a shelf start..stop-1, for every stop and every height cap
        widths = cumulative[start + 1 :] - cumulative[start]
        fits = widths <= fabric_width  # shape (count - start, fabric_height + 1)
        any_fit = fits.any(axis=1)
        first_height = np.where(any_fit, fits.argmax(axis=1), 0)
        totals = np.where(any_fit, best_height[start] + first_height, np.inf)
        better = totals < best_height[start + 1 :]
        stops = start + 1 + np.flatnonzero(better)
        best_height[stops] = totals[better]
        previous[stops] = start
        shelf_height[stops] = first_height[better]
    return best_height, previous, shelf_height


def shelf_total_height(min_width: np.ndarray, fabric_width: int) -> float:
    """Least total height of shelves holding the kernels in this order (inf if one fits no shelf)."""
    program = _shelf_program(min_width, fabric_width)
    return np.inf if program is None else float(program[0][-1])


def pack_shelves(min_width: np.ndarray, fabric_width: int, fabric_height: int) -> list[Shelf] | None:
    """Split kernels (in order) into shelves of least total height, or None if over ``fabric_height``.

    ``min_width[i, H]`` is the narrowest legal width of kernel ``i`` when its height may not exceed
    ``H`` (``inf`` when no shape fits), for ``H = 0 .. fabric_height``; it must be non-increasing in
    ``H``.  A shelf of height ``H`` holding kernels ``i..j-1`` is feasible when their widths sum to at
    most ``fabric_width``; the smallest such ``H`` is found for every (i, j) at once with
    cumulative sums, and a dynamic program over the split points minimises the total height.
    """
    program = _shelf_program(min_width, fabric_width)
    if program is None:
        return None
    best_height, previous, shelf_height = program
    count = len(min_width)
    if best_height[count] > fabric_height:
        return None
    shelves: list[Shelf] = []
    stop = count
    while stop > 0:
        start = int(previous[stop])
        shelves.append(Shelf(start=start, stop=stop, height=int(shelf_height[stop])))
        stop = start
    return shelves[::-1]
