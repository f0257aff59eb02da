"""The ISPD solver's time limit, shared out between the phases of a solve."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from csconform.errors import TimeLimitError


class Clock:
    """The solver's time limit, counted from ``started`` (the command's start, so parsing counts).

    Shares of the limit: bounding the slowest time before the search until ``bound_share``; the
    search for the fastest packing until ``search_share``; shortening the wires until
    ``polish_share``; the rest is left for the relaxation bound, the independent check and writing
    the result. A step is not started when the last step of its kind took longer than the time left
    for it (:meth:`allows`), and :meth:`require` stops a phase that has no placement to show yet.
    """

    bound_share = 0.3
    search_share = 0.7
    polish_share = 0.8

    def __init__(self, limit_s: float, started: float, what: str) -> None:
        self.limit_s, self.started, self.what = limit_s, started, what
        self.step_s: dict[str, float] = {}  # kind of step -> how long the last one took

    def remaining(self, share: float = 1.0) -> float:
        return self.started + share * self.limit_s - time.perf_counter()

    def expired(self, share: float = 1.0) -> bool:
        return self.remaining(share) <= 0

    def allows(self, kind: str, share: float) -> bool:
        """True when another step of ``kind`` can end before ``share`` of the limit (as long as the last)."""
        return self.remaining(share) > self.step_s.get(kind, 0.0)

    @contextlib.contextmanager
    def step(self, kind: str) -> Iterator[None]:
        begun = time.perf_counter()
        yield
        self.step_s[kind] = time.perf_counter() - begun

    def require(self, doing: str, kind: str = "") -> None:
        """Refuse (TimeLimitError) when the limit is spent, or too little is left for another step
        of ``kind``, while ``doing`` something that must finish before any legal placement exists."""
        if not self.allows(kind, 0.95):
            raise TimeLimitError(
                f"{self.what}: the time limit of {self.limit_s:g} s ran out while {doing}, before a legal "
                "placement was found; allow more with --time-limit"
            )
