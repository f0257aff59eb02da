"""Bisection on a target time: the least time a monotone test accepts, as the placers search for it.

The column placer's area bound, its integer legalisation and the ISPD shape bound all ask the same
question of a different test (do the kernels fit at this time?): the test accepts every time above
some threshold, and the interval ``[low, high]`` (``low`` refused, ``high`` accepted) is halved
around it.
"""

from __future__ import annotations

from collections.abc import Callable

MAX_HALVINGS = 200
"""At most this many halvings: a guard against subnormal bounds, far beyond any tolerance's need."""


def bisect_time(
    accepts: Callable[[float], bool],
    low: float,
    high: float,
    relative_tolerance: float,
    stop: Callable[[], bool] = lambda: False,
) -> tuple[float, float]:
    """``[low, high]`` halved around the least time ``accepts``, until it is narrower than
    ``relative_tolerance`` of ``high`` or ``stop()`` says so; returns the final ``(low, high)``."""
    for _ in range(MAX_HALVINGS):
        if high - low <= relative_tolerance * high or stop():
            break
        middle = (low + high) / 2
        if accepts(middle):
            high = middle
        else:
            low = middle
    return low, high
