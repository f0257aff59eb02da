"""Shelves: kernels in a given order split into horizontal bands of least total height (the ISPD solver's layout).

Given every kernel's narrowest legal width under each height cap, a shortest path over the split
points picks the split that needs the least total height (:class:`ShelfTable`, prepared once per
table and asked for many orders). The independent checker (:mod:`csconform.perf.placement.checker`)
validates the layouts built on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra


@dataclass(frozen=True)
class Shelf:
    """Kernels ``start`` to ``stop - 1`` (pipeline order) side by side in one horizontal band."""

    start: int
    stop: int
    height: int


class ShelfTable:
    """Every kernel's narrowest width under each height cap, prepared once for many kernel orders.

    ``min_width[i, H]`` is the narrowest legal width of kernel ``i`` when its height may not exceed
    ``H`` (``inf`` when no shape fits), for ``H = 0 .. fabric_height``; it must be non-increasing in
    ``H``.  A shelf of height ``H`` holding kernels ``i..j-1`` (in the order asked for) is feasible
    when their widths there sum to at most ``fabric_width``.  Only the caps at which some kernel's
    narrowest width changes can be a shelf's least height, so only those are kept.
    """

    def __init__(self, min_width: np.ndarray, fabric_width: int) -> None:
        # any width beyond the fabric is as bad as "no shape": clip so that sums stay finite
        clipped = np.minimum(np.asarray(min_width, dtype=float), fabric_width + 1.0)
        self.fabric_width = fabric_width
        self.fits_alone = bool((clipped[:, -1] <= fabric_width).all())  # every kernel fits some shelf
        self.caps = np.flatnonzero(np.r_[True, (clipped[:, 1:] != clipped[:, :-1]).any(axis=0)])
        self.widths = clipped[:, self.caps]
        # each kernel's least area: no split can give the kernels less height than their areas need
        self.least_area = np.where(self.widths <= fabric_width, self.widths * self.caps, np.inf).min(axis=1)

    def _shelves(self, order: Sequence[int], height_limit: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The shelves a split of total height at most ``height_limit`` can use, and their least heights.

        Returns (start, stop, height), sorted by start then stop.  A shelf is left out when the other
        kernels' least areas, spread over the fabric width, leave it less height than it needs;
        the others are bisected over the caps, all at once: a shelf's width sum falls as the cap grows.
        """
        count, caps = len(order), len(self.caps)
        cumulative = np.vstack([np.zeros((1, caps)), np.cumsum(self.widths[order], axis=0)])
        # every shelf that fits under the tallest cap
        tallest = cumulative[:, -1]  # non-decreasing: widths are positive
        last_stop = np.searchsorted(tallest, tallest[:count] + self.fabric_width, side="right") - 1
        lengths = last_stop - np.arange(count)  # >= 1: every kernel fits a shelf alone
        starts = np.repeat(np.arange(count), lengths)
        stops = starts + 1 + np.arange(len(starts)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        # the tallest cap each shelf may take, given what the other kernels need
        area_before = np.r_[0.0, np.cumsum(self.least_area[order])]
        others = area_before[starts] + area_before[-1] - area_before[stops]
        high = np.searchsorted(self.caps, height_limit - others / self.fabric_width + 1e-9, side="right") - 1
        flat = cumulative.ravel()
        start_rows, stop_rows = starts * caps, stops * caps
        usable = np.flatnonzero(high >= 0)
        width_there = flat[stop_rows[usable] + high[usable]] - flat[start_rows[usable] + high[usable]]
        usable = usable[width_there <= self.fabric_width]
        starts, stops, start_rows, stop_rows, high = (v[usable] for v in (starts, stops, start_rows, stop_rows, high))
        low = np.zeros(len(starts), dtype=np.int64)
        while (low < high).any():
            middle = (low + high) // 2
            fits = flat[stop_rows + middle] - flat[start_rows + middle] <= self.fabric_width
            high = np.where(fits, middle, high)
            low = np.where(fits, low, middle + 1)
        return starts, stops, self.caps[high]

    @staticmethod
    def _least_total_heights(count: int, starts: np.ndarray, stops: np.ndarray, heights: np.ndarray) -> np.ndarray:
        """Least total height of shelves holding kernels 0..j-1, for every j = 0..count (inf: none found).

        Splitting kernels into shelves is a shortest path from split point 0 to ``count``, each shelf
        an arc weighted by its height; scipy's Dijkstra finds it.
        """
        first_arc = np.searchsorted(starts, np.arange(count + 2))
        # int32 indices spare scipy a scan of the arrays to choose the index type
        arcs = csr_matrix(
            (heights.astype(float), stops.astype(np.int32), first_arc.astype(np.int32)), shape=(count + 1, count + 1)
        )
        return dijkstra(arcs, indices=0)

    def total_height(self, order: Sequence[int], height_limit: float = np.inf) -> float:
        """Least total height of shelves holding the kernels in this order; inf when it exceeds
        ``height_limit`` or some kernel fits no shelf.  A finite limit makes it faster."""
        if not self.fits_alone:
            return np.inf
        total = float(self._least_total_heights(len(order), *self._shelves(order, height_limit))[-1])
        return total if total <= height_limit else np.inf

    def pack(self, order: Sequence[int], fabric_height: int) -> list[Shelf] | None:
        """Split the kernels, in this order, into shelves of least total height; None if over
        ``fabric_height``.  Among equally low splits each shelf starts as early as it can, so the
        layout does not depend on how the shortest path was found."""
        if not self.fits_alone:
            return None
        count = len(order)
        starts, stops, heights = self._shelves(order, fabric_height)
        best_height = self._least_total_heights(count, starts, stops, heights)
        if best_height[-1] > fabric_height:
            return None
        on_a_shortest_path = best_height[starts] + heights == best_height[stops]
        previous = np.full(count + 1, count + 1)
        np.minimum.at(previous, stops[on_a_shortest_path], starts[on_a_shortest_path])
        shelf_key = starts * (count + 1) + stops  # sorted, like the shelves
        result: list[Shelf] = []
        stop = count
        while stop > 0:
            start = int(previous[stop])
            height = heights[np.searchsorted(shelf_key, start * (count + 1) + stop)]
            result.append(Shelf(start=start, stop=stop, height=int(height)))
            stop = start
        return result[::-1]


def shelf_total_height(min_width: np.ndarray, fabric_width: int) -> float:
    """Least total height of shelves holding the kernels in table order (inf if one fits no shelf)."""
    return ShelfTable(min_width, fabric_width).total_height(range(len(min_width)))


def pack_shelves(min_width: np.ndarray, fabric_width: int, fabric_height: int) -> list[Shelf] | None:
    """Split kernels (in table order) into shelves of least total height (see :class:`ShelfTable`)."""
    return ShelfTable(min_width, fabric_width).pack(range(len(min_width)), fabric_height)
