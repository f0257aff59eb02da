"""Throughput placement: one rectangle of cores per kernel, sized and placed to maximise samples/s.

The documents say the compiler "maps each kernel/layer ... onto a region (a rectangle)" and
"chooses sizes of regions and places them so as to optimize the throughput".  In a layer pipeline
every kernel works on a different sample at once, so the wafer accepts one sample per
``max_i cycles_i`` cycles: maximising samples/s means minimising the slowest kernel's cycles.

Public API (used by the pipelined execution model)::

    demands = [KernelDemand("conv1", core_cycles_per_sample=4e6, memory_bytes=2e6), ...]
    fabric = Fabric(width=750, height=994, memory_per_core_bytes=48 * 1024)
    placement = place_kernels(demands, fabric, edges=[(0, 1, 8192.0)], time_limit_s=30.0)
    placement.rects                         # one integer Rect per kernel, in input order
    placement.cycles_per_sample             # per kernel, achieved: work / (width * height)
    placement.slowest_cycles_per_sample     # what sets samples/s = clock_hz / slowest
    placement.bound_cycles_per_sample       # continuous optimum of the same layout (<= slowest)
    placement.area_bound_cycles_per_sample  # area relaxation, a bound on ANY legal placement
    placement.bound_ratio                   # bound / achieved, in (0, 1]

Model of a kernel: ``core_cycles_per_sample`` is the work one core would need for one sample; on a
rectangle of ``a`` cores the kernel takes ``work / a`` cycles.  ``memory_bytes`` must be spread over
the rectangle: ``memory_bytes / a <= memory_per_core_bytes``.

Method (Boyd & Vandenberghe §8.8 floor planning: fix the relative order, then the sizing problem is
convex):

1. The kernels, in the given (pipeline) order, are split into consecutive columns of roughly equal
   share of the area relaxation; columns are laid out left to right and filled alternately upwards
   and downwards (a serpentine), so consecutive kernels of the pipeline touch.
2. For that order the sizing is a geometric program, solved by cvxpy with ``gp=True``: column widths
   ``w_c``, kernel heights ``h_i`` and the slowest time ``T`` are positive variables; ``sum w <=
   fabric width``, ``sum of h in a column <= fabric height``, ``work_i <= w_c h_i T`` and
   ``floor_i <= w_c h_i`` (memory and ``min_cores``).  Its optimum is the continuous bound.
3. :mod:`csconform.perf.placement.legalise` finds the best integer column widths and row counts for the same
   partition (a bisection on ``T`` starting at the area relaxation), so the legal placement can never
   beat the bound, and the ratio bound/achieved says how much rounding cost.

Several column counts are tried within ``time_limit_s`` and the fastest legal layout is kept.

``edges`` (``(i, j, bytes_per_sample)``) are the activations flowing between kernels.  They are
used modestly: the serpentine keeps kernels adjacent in the given order, and the result reports
the traffic-weighted wire length (bytes x L1 distance between centres) so layouts can be compared.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from csconform.errors import InfeasibleError, InvalidInputError, PlacementError
from csconform.perf.placement.bisection import bisect_time
from csconform.perf.placement.legalise import ColumnLayout, legalise_columns


@dataclass(frozen=True)
class KernelDemand:
    """What one kernel asks of the wafer, per training sample."""

    name: str
    core_cycles_per_sample: float  # cycles ONE core would need for one sample
    memory_bytes: float  # bytes the kernel keeps in its region
    min_cores: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidInputError(f"kernel name must be a non-empty string, got {self.name!r}")
        for label, value in (
            ("core_cycles_per_sample", self.core_cycles_per_sample),
            ("memory_bytes", self.memory_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise InvalidInputError(f"kernel {self.name!r}: {label} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise InvalidInputError(f"kernel {self.name!r}: {label} must be finite and >= 0, got {value!r}")
        if isinstance(self.min_cores, bool) or not isinstance(self.min_cores, int | np.integer) or self.min_cores < 1:
            raise InvalidInputError(f"kernel {self.name!r}: min_cores must be an integer >= 1, got {self.min_cores!r}")


@dataclass(frozen=True)
class Fabric:
    """The core grid a placement must fit in, and the memory of one core."""

    width: int
    height: int
    memory_per_core_bytes: int

    def __post_init__(self) -> None:
        for label, value in (("width", self.width), ("height", self.height)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise InvalidInputError(f"fabric {label} must be an integer >= 1, got {value!r}")
        memory = self.memory_per_core_bytes
        if isinstance(memory, bool) or not isinstance(memory, int | float | np.number) or not memory > 0:
            raise InvalidInputError(f"fabric memory_per_core_bytes must be > 0, got {memory!r}")
        if not math.isfinite(memory):
            raise InvalidInputError(f"fabric memory_per_core_bytes must be finite, got {memory!r}")

    @property
    def cores(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class Rect:
    """An axis-aligned rectangle of cores; (x, y) is its lower-left core."""

    name: str
    x: int
    y: int
    width: int
    height: int

    @property
    def cores(self) -> int:
        return self.width * self.height

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x + self.width / 2, self.y + self.height / 2)


@dataclass
class Placement:
    """A legal placement and how far it is from the continuous optimum."""

    rects: list[Rect]
    cycles_per_sample: list[float]  # per kernel, achieved
    bound_cycles_per_sample: float  # continuous optimum of the same layout
    area_bound_cycles_per_sample: float = 0.0  # area relaxation: bounds every legal placement
    wirelength_byte_cores: float = 0.0  # sum over edges of bytes x L1 distance between centres
    columns: int = 0  # how many columns the chosen layout has
    solve_s: float = 0.0

    @property
    def slowest_cycles_per_sample(self) -> float:
        return max(self.cycles_per_sample)

    @property
    def bound_ratio(self) -> float:
        """bound / achieved (1.0 = at the continuous optimum)."""
        slowest = self.slowest_cycles_per_sample
        return 1.0 if slowest == 0 else self.bound_cycles_per_sample / slowest


# --- input checks ---------------------------------------------------------------------------------


def _validate(
    demands: Sequence[KernelDemand], fabric: Fabric, edges: Sequence[tuple[int, int, float]]
) -> list[tuple[int, int, float]]:
    if not isinstance(fabric, Fabric):
        raise InvalidInputError(f"fabric must be a Fabric, got {type(fabric).__name__}")
    if isinstance(demands, str | bytes) or not isinstance(demands, Sequence) or len(demands) == 0:
        raise InvalidInputError("place_kernels needs a non-empty sequence of KernelDemand")
    for demand in demands:
        if not isinstance(demand, KernelDemand):
            raise InvalidInputError(f"expected KernelDemand, got {type(demand).__name__}")
    names = [d.name for d in demands]
    if len(set(names)) != len(names):
        raise InvalidInputError("kernel names must be unique")
    checked: list[tuple[int, int, float]] = []
    for edge in edges:
        if len(edge) != 3:
            raise InvalidInputError(f"an edge is (i, j, bytes_per_sample), got {edge!r}")
        i, j, traffic = edge
        for end in (i, j):
            if isinstance(end, bool) or not isinstance(end, int | np.integer) or not 0 <= end < len(demands):
                raise InvalidInputError(f"edge {edge!r}: kernel index {end!r} is not in 0..{len(demands) - 1}")
        if i == j:
            raise InvalidInputError(f"edge {edge!r} connects a kernel to itself")
        if isinstance(traffic, bool) or not isinstance(traffic, int | float | np.number):
            raise InvalidInputError(f"edge {edge!r}: bytes_per_sample must be a number")
        if not math.isfinite(traffic) or traffic < 0:
            raise InvalidInputError(f"edge {edge!r}: bytes_per_sample must be finite and >= 0")
        checked.append((int(i), int(j), float(traffic)))
    return checked


def _floor_cores(demands: Sequence[KernelDemand], fabric: Fabric) -> np.ndarray:
    """Fewest cores each kernel may have: its memory spread at full per-core capacity, and min_cores."""
    memory = np.array([d.memory_bytes for d in demands], dtype=float)
    for_memory = np.ceil(memory / fabric.memory_per_core_bytes)
    minimum = np.array([d.min_cores for d in demands], dtype=float)
    return np.maximum(np.maximum(for_memory, minimum), 1.0)


def _refuse_if_infeasible(demands: Sequence[KernelDemand], fabric: Fabric, floor_cores: np.ndarray) -> None:
    """Raise InfeasibleError for demands no placement could ever meet, with the reason."""
    for demand, cores in zip(demands, floor_cores, strict=True):
        if cores > fabric.cores:
            raise InfeasibleError(
                f"kernel {demand.name!r} needs {int(cores)} cores ({demand.memory_bytes:.4g} bytes, "
                f"min_cores {demand.min_cores}) but the whole fabric has {fabric.cores} "
                f"({fabric.width} x {fabric.height}); it does not fit on the wafer"
            )
    if floor_cores.sum() > fabric.cores:
        raise InfeasibleError(
            f"the kernels need at least {int(floor_cores.sum())} cores together (memory and min_cores) "
            f"but the fabric has {fabric.cores} ({fabric.width} x {fabric.height}); the model does not fit"
        )


# --- the continuous problems ------------------------------------------------------------------------


def area_bound_cycles(work: np.ndarray, floor_cores: np.ndarray, total_cores: int) -> float:
    """Smallest T with sum_i max(work_i / T, floor_i) <= total cores: a bound on any legal placement.

    Disjoint rectangles cannot use more cores than the fabric has, whatever their shapes.
    """
    if work.max() == 0:
        return 0.0
    if floor_cores.sum() >= total_cores:
        return float(np.max(work / floor_cores))

    def needed(target: float) -> float:
        return float(np.maximum(work / target, floor_cores).sum())

    def fits(target: float) -> bool:
        return target > 0 and needed(target) <= total_cores

    high = float(work.sum() / (total_cores - floor_cores.sum())) + float(work.max())
    return bisect_time(fits, 0.0, high, relative_tolerance=1e-12)[1]


def _column_partition(shares: np.ndarray, column_count: int) -> list[np.ndarray]:
    """Split kernels (in order) into ``column_count`` consecutive groups of about equal share."""
    cumulative = np.cumsum(shares) / shares.sum()
    targets = np.arange(1, column_count) / column_count
    cuts = np.searchsorted(cumulative, targets, side="left") + 1
    cuts = np.unique(np.clip(cuts, 1, len(shares) - 1)) if len(shares) > 1 else np.array([], dtype=int)
    groups = np.split(np.arange(len(shares)), cuts)
    return [g for g in groups if len(g)]


def _solve_column_gp(
    work: np.ndarray, floor_cores: np.ndarray, columns: list[np.ndarray], fabric: Fabric, time_limit_s: float
) -> float:
    """Continuous optimum of the column layout (a geometric program); 0 when no kernel does work."""
    import cvxpy as cp  # here, not at the top: a weight-streaming plan never pays for importing it

    if work.max() == 0:
        return 0.0
    count = len(work)
    column_of = np.empty(count, dtype=int)
    for index, members in enumerate(columns):
        column_of[members] = index
    heights = cp.Variable(count, pos=True)  # cores, continuous
    widths = cp.Variable(len(columns), pos=True)
    slowest = cp.Variable(pos=True)  # cycles per sample
    cores = cp.multiply(heights, widths[column_of])
    busy = work > 1e-12  # work is normalised to max 1; dropping negligible kernels keeps a valid bound
    constraints = [cp.sum(widths) <= fabric.width, floor_cores <= cores]
    constraints += [cp.sum(heights[members[0] : members[-1] + 1]) <= fabric.height for members in columns]
    constraints.append(work[busy] <= cp.multiply(cores[np.flatnonzero(busy)], slowest))
    problem = cp.Problem(cp.Minimize(slowest), constraints)
    try:
        problem.solve(gp=True, solver=cp.CLARABEL, time_limit=max(time_limit_s, 1.0))
    except cp.error.SolverError as error:
        raise PlacementError(f"the geometric program failed: {error}") from error
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or slowest.value is None:
        raise PlacementError(f"the geometric program ended with status {problem.status!r}")
    # the solver's interior point sits a hair inside; never report a bound above the true optimum
    return float(slowest.value) * (1 - 1e-6)


def _column_counts(shares: np.ndarray, fabric: Fabric) -> list[int]:
    """Column counts to try: cells about square on average, and a few neighbours."""
    count = len(shares)
    average_side = math.sqrt(fabric.cores / count)
    per_column = max(1.0, fabric.height / average_side)
    middle = max(1, round(count / per_column))
    candidates = {middle, max(1, round(middle * 0.7)), round(middle * 1.4), max(1, middle - 1), middle + 1}
    ordered = sorted(c for c in candidates if 1 <= c <= min(count, fabric.width))
    # last resort: one kernel per column, which fits whenever each kernel fits a column of its own
    if count <= fabric.width and count not in ordered:
        ordered.append(count)
    return ordered


# --- the layout -----------------------------------------------------------------------------------


def _rects(
    demands: Sequence[KernelDemand], columns: list[np.ndarray], layout: ColumnLayout, fabric: Fabric
) -> list[Rect]:
    """Serpentine: even columns fill upwards from y = 0, odd columns downwards from the top."""
    rects: list[Rect | None] = [None] * len(demands)
    x = 0
    for index, (members, width) in enumerate(zip(columns, layout.column_widths, strict=True)):
        y = 0 if index % 2 == 0 else fabric.height
        for kernel in members:
            rows = int(layout.rows[kernel])
            if index % 2 == 1:
                y -= rows
            rects[kernel] = Rect(demands[kernel].name, x, y, int(width), rows)
            if index % 2 == 0:
                y += rows
        x += int(width)
    return [r for r in rects if r is not None]


def wirelength(rects: Sequence[Rect], edges: Sequence[tuple[int, int, float]]) -> float:
    """Traffic-weighted wire length: sum of bytes x L1 distance between the regions' centres."""
    total = 0.0
    for i, j, traffic in edges:
        (xi, yi), (xj, yj) = rects[i].centre, rects[j].centre
        total += traffic * (abs(xi - xj) + abs(yi - yj))
    return total


def place_kernels(
    demands: Sequence[KernelDemand],
    fabric: Fabric,
    edges: Sequence[tuple[int, int, float]] = (),
    time_limit_s: float = 30.0,
) -> Placement:
    """Size and place one rectangle per kernel to minimise the slowest kernel's cycles per sample.

    Raises InvalidInputError for empty or malformed input, InfeasibleError when the memory (or
    min_cores) of the kernels cannot fit the fabric, PlacementError if no legal layout was found.
    """
    started = time.perf_counter()
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) or not time_limit_s > 0:
        raise InvalidInputError(f"time_limit_s must be a positive number, got {time_limit_s!r}")
    checked_edges = _validate(demands, fabric, edges)
    work = np.array([d.core_cycles_per_sample for d in demands], dtype=float)
    floor_cores = _floor_cores(demands, fabric)
    _refuse_if_infeasible(demands, fabric, floor_cores)
    # solve in units of the largest work, so tiny or huge cycle counts stay well conditioned
    scale = float(work.max()) if work.max() > 0 else 1.0
    unit_work = work / scale
    unit_area_bound = area_bound_cycles(unit_work, floor_cores, fabric.cores)
    shares = np.maximum(unit_work / unit_area_bound, floor_cores) if unit_area_bound > 0 else floor_cores.copy()

    best: tuple[float, list[np.ndarray], ColumnLayout] | None = None
    for column_count in _column_counts(shares, fabric):
        if best is not None and time.perf_counter() - started > time_limit_s / 2:
            break
        if best is not None and column_count == len(demands) and len(demands) > 1:
            break  # the one-per-column fallback is only for when nothing else fitted
        columns = _column_partition(shares, column_count)
        if any(floor_cores[m].sum() > fabric.cores for m in columns):
            continue
        layout = legalise_columns(unit_work, floor_cores, columns, fabric.width, fabric.height, unit_area_bound)
        if layout is None:
            continue
        slowest = float(layout.cycles_per_sample.max())
        if best is None or slowest < best[0]:
            best = (slowest, columns, layout)
    if best is None:
        raise PlacementError(
            f"no column layout of the {len(demands)} kernels fits the {fabric.width} x {fabric.height} "
            "fabric (too many kernels for the rows, or memory too fragmented)"
        )
    _, columns, layout = best
    remaining_s = max(time_limit_s - (time.perf_counter() - started), 1.0)
    bound = _solve_column_gp(unit_work, floor_cores, columns, fabric, remaining_s) * scale
    rects = _rects(demands, columns, layout, fabric)
    achieved = [float(d.core_cycles_per_sample / r.cores) for d, r in zip(demands, rects, strict=True)]
    return Placement(
        rects=rects,
        cycles_per_sample=achieved,
        bound_cycles_per_sample=bound,
        area_bound_cycles_per_sample=unit_area_bound * scale,
        wirelength_byte_cores=wirelength(rects, checked_edges),
        columns=len(columns),
        solve_s=time.perf_counter() - started,
    )
