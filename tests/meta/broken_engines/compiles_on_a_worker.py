"""Broken on purpose: a runner job is compiled on a worker node, not the chief (breaks COMPILE-008)."""

from __future__ import annotations

import csconform.engine as _reference
from csconform.engine.runner import WORKER_NODE, JobEvent
from csconform.engine.runner import Runner as _Runner

_ensure_programmed = _Runner._ensure_programmed


def _compile_on_a_worker(self, *args) -> None:
    _ensure_programmed(self, *args)
    self.job_log[:] = [JobEvent(WORKER_NODE, e.action) if e.action == "compile" else e for e in self.job_log]


_Runner._ensure_programmed = _compile_on_a_worker


def __getattr__(name: str):
    return getattr(_reference, name)
