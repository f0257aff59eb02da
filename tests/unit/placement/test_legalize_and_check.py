"""Integer legalisation against brute force, and the independent checker against broken placements."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from csconform.errors import PlacementError
from csconform.perf.placement import checker
from csconform.perf.placement.columns import Fabric, KernelDemand, Rect, area_bound_cycles, place_kernels
from csconform.perf.placement.legalise import legalise_columns, narrowest_column, rows_needed
from csconform.perf.placement.shelves import pack_shelves, shelf_total_height


def test_rows_needed_rounds_time_and_memory_up() -> None:
    work = np.array([100.0, 1.0, 0.0])
    floor = np.array([1.0, 9.0, 1.0])
    assert rows_needed(work, floor, column_width=4, target_cycles=10.0).tolist() == [3.0, 3.0, 1.0]


def test_narrowest_column_is_the_least_width_that_fits() -> None:
    work, floor = np.array([60.0, 40.0]), np.array([1.0, 1.0])
    width = narrowest_column(work, floor, fabric_width=50, fabric_height=10, target=2.0)
    assert rows_needed(work, floor, width, 2.0).sum() <= 10
    assert rows_needed(work, floor, width - 1, 2.0).sum() > 10
    assert narrowest_column(work, np.array([600.0, 1.0]), 50, 10, 2.0) is None


@settings(max_examples=30)
@given(
    work=st.lists(st.integers(0, 60), min_size=1, max_size=4),
    width=st.integers(2, 6),
    height=st.integers(2, 6),
)
def test_one_column_legalisation_matches_brute_force(work: list[int], width: int, height: int) -> None:
    """With one column the best integer layout can be enumerated: every width and row split."""
    work_array = np.array(work, dtype=float)
    floor = np.ones(len(work))
    layout = legalise_columns(work_array, floor, [np.arange(len(work))], width, height, 0.0)
    best = np.inf
    for column_width in range(1, width + 1):
        for rows in itertools.product(range(1, height + 1), repeat=len(work)):
            if sum(rows) <= height:
                best = min(best, max(w / (column_width * r) for w, r in zip(work, rows, strict=True)))
    if best == np.inf:
        assert layout is None
    else:
        assert layout is not None
        assert layout.cycles_per_sample.max() == pytest.approx(best, rel=1e-6)


def test_pack_shelves_minimises_total_height() -> None:
    inf = np.inf
    # widths of three kernels under height caps 0..4 on a 4 x 4 fabric
    table = np.array(
        [
            [inf, 4, 2, 2, 1],
            [inf, 4, 2, 1, 1],
            [inf, inf, 3, 2, 2],
        ]
    )
    shelves = pack_shelves(table, fabric_width=4, fabric_height=4)
    assert shelves is not None
    # one shelf needs height 4 (1 + 1 + 2); no split does better: e.g. [0, 1] at 2 and [2] at 2
    assert sum(s.height for s in shelves) == 4
    assert shelves[0].start == 0 and shelves[-1].stop == 3
    for shelf in shelves:
        assert table[shelf.start : shelf.stop, shelf.height].sum() <= 4
    assert pack_shelves(np.array([[inf, inf, 5.0]]), fabric_width=4, fabric_height=2) is None


def brute_force_shelves(table: np.ndarray, width: int) -> float:
    count = len(table)
    best = np.inf
    for cuts in itertools.product([0, 1], repeat=count - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [count]
        total = 0
        for start, stop in itertools.pairwise(bounds):
            fitting = [h for h in range(table.shape[1]) if table[start:stop, h].sum() <= width]
            if not fitting:
                total = np.inf
                break
            total += fitting[0]
        best = min(best, total)
    return best


@settings(max_examples=30)
@given(st.data())
def test_pack_shelves_matches_brute_force(data) -> None:
    count = data.draw(st.integers(1, 5))
    rows = []
    for _ in range(count):
        widths = data.draw(st.lists(st.integers(1, 6), min_size=6, max_size=6))
        rows.append(np.minimum.accumulate([np.inf, *map(float, widths)]))  # non-increasing in the cap
    table = np.array(rows)
    shelves = pack_shelves(table, fabric_width=6, fabric_height=6)
    expected = brute_force_shelves(table, 6)
    assert shelf_total_height(table, 6) == expected
    if expected > 6:
        assert shelves is None
    else:
        assert shelves is not None and sum(s.height for s in shelves) == expected


def test_area_bound_solves_the_area_equation() -> None:
    work, floor = np.array([100.0, 300.0]), np.array([1.0, 1.0])
    bound = area_bound_cycles(work, floor, total_cores=40)
    assert bound == pytest.approx(10.0)
    assert area_bound_cycles(np.zeros(2), floor, 40) == 0.0


# --- the checker ------------------------------------------------------------------------------------


def test_checker_accepts_a_legal_placement_and_names_each_violation() -> None:
    good = [Rect("a", 0, 0, 2, 2), Rect("b", 2, 0, 2, 4)]
    assert checker.placement_violations(good, 4, 4, memory_per_core=10, memory=[40, 80]) == []
    assert "more than once" in checker.placement_violations([Rect("a", 0, 0, 2, 2), Rect("b", 1, 1, 2, 2)], 4, 4)[0]
    assert "leaves" in checker.placement_violations([Rect("a", 3, 0, 2, 2)], 4, 4)[0]
    assert "leaves" in checker.placement_violations([Rect("a", -1, 0, 1, 1)], 4, 4)[0]
    assert "non-integer" in checker.placement_violations([Rect("a", 0.5, 0, 1, 1)], 4, 4)[0]
    assert "non-integer" in checker.placement_violations([Rect("a", True, 0, 1, 1)], 4, 4)[0]
    assert "empty" in checker.placement_violations([Rect("a", 0, 0, 0, 1)], 4, 4)[0]
    assert "bytes per core" in checker.placement_violations(good, 4, 4, memory_per_core=10, memory=[41, 80])[0]
    with pytest.raises(PlacementError, match="illegal placement"):
        checker.assert_legal(["x"])
    checker.assert_legal([])


def test_placements_of_many_shapes_pass_the_checker() -> None:
    fabric = Fabric(64, 48, 2048)
    rng = np.random.default_rng(7)
    for count in (1, 2, 7, 40, 200):
        demands = [
            KernelDemand(f"k{i}", float(rng.uniform(1, 1e6)), float(rng.uniform(0, 20_000)), int(rng.integers(1, 4)))
            for i in range(count)
        ]
        placement = place_kernels(demands, fabric)
        memory = [d.memory_bytes for d in demands]
        assert checker.placement_violations(placement.rects, 64, 48, 2048, memory) == []
        assert placement.bound_cycles_per_sample <= placement.slowest_cycles_per_sample


def test_zero_work_kernels_are_placed_with_zero_cycles() -> None:
    placement = place_kernels([KernelDemand("idle", 0.0, 0.0), KernelDemand("idle2", 0.0, 10.0)], Fabric(4, 4, 8))
    assert placement.cycles_per_sample == [0.0, 0.0]
    assert placement.bound_ratio == 1.0
    assert placement.rects[1].cores >= 2


def test_edges_give_a_traffic_weighted_wirelength() -> None:
    demands = [KernelDemand(f"k{i}", 100.0, 0.0) for i in range(4)]
    placement = place_kernels(demands, Fabric(8, 8, 64), edges=[(0, 1, 2.0), (2, 3, 0.0)])
    (ax, ay), (bx, by) = placement.rects[0].centre, placement.rects[1].centre
    assert placement.wirelength_byte_cores == pytest.approx(2.0 * (abs(ax - bx) + abs(ay - by)))
