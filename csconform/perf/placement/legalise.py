"""Integer legalisation of a column layout: continuous region sizes turned into whole cores on the grid.

Used by :func:`csconform.perf.placement.columns.place_kernels`: kernels in pipeline order are split
into consecutive columns; a column has one integer width and every kernel in it an integer number
of rows.  With the relative order fixed in advance the integer problem stays one-dimensional: for a
target time the smallest width of each column follows from a monotone search, so a bisection on the
target time finds the best integer layout of that partition exactly (up to a relative tolerance).
The independent checker (:mod:`csconform.perf.placement.checker`) validates the layouts.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from csconform.perf.placement.bisection import bisect_time

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

    def fits(width: int) -> bool:  # the wider the column, the fewer rows its kernels need
        return bool(rows_needed(work_cycles, floor_cores, width, target).sum() <= fabric_height)

    if not fits(fabric_width):
        return None
    return bisect.bisect_left(range(1, fabric_width + 1), True, key=fits) + 1


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

    def fits(target: float) -> bool:
        return _column_widths(work_cycles, floor_cores, columns, fabric_width, fabric_height, target) is not None

    high = bisect_time(fits, low, high, RELATIVE_TOLERANCE)[1]
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
