"""Sweeps over a design space: models x wafers x batch sizes x cluster sizes (x modes).

Each point is one :func:`csconform.perf.plan.plan` call, independent of the others, so a sweep
runs anywhere a function can be mapped: locally in this process by default, or on a Dask
distributed cluster given its scheduler address. A point the model refuses (a model that does not
fit pipelined, a batch that does not split over the systems) becomes a row with its reason, not a
failed sweep.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
from tqdm import tqdm

from csconform.errors import CsConformError, InvalidInputError
from csconform.perf.hardware import get_wafer
from csconform.perf.models.zoo import get_model
from csconform.perf.plan import MODES, plan

COLUMNS = [
    "model",
    "wafer",
    "mode",
    "systems",
    "batch",
    "params",
    "flops_per_sample",
    "samples_per_s",
    "bound_samples_per_s",
    "efficiency_vs_bound",
    "status",
]


@dataclass(frozen=True)
class Point:
    """One design point; ``mode`` None lets the model choose (pipelined if it fits)."""

    model: str
    wafer: str
    systems: int
    batch: int | None
    mode: str | None = None


def design_space(
    models: Sequence[str],
    wafers: Sequence[str],
    systems: Sequence[int] = (1,),
    batches: Sequence[int | None] = (None,),
    modes: Sequence[str | None] = (None,),
) -> list[Point]:
    """The cross product, validated up front so a typo fails before any work is done."""
    for name in models:
        get_model(name)
    for name in wafers:
        get_wafer(name)
    for mode in modes:
        if mode is not None and mode not in MODES:
            raise InvalidInputError(f"unknown mode {mode!r}; known modes: {', '.join(MODES)}")
    for count in systems:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidInputError(f"systems must be positive integers, got {count!r}")
    for batch in batches:
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise InvalidInputError(f"batch sizes must be positive integers, got {batch!r}")
    return [Point(*values) for values in itertools.product(models, wafers, systems, batches, modes)]


def evaluate(point: Point, time_limit_s: float = 5.0) -> dict[str, Any]:
    """Plan one point; a refusal by the model is recorded in ``status``."""
    row: dict[str, Any] = {**asdict(point), "status": "ok"}
    try:
        result = plan(
            point.model,
            wafer=point.wafer,
            mode=point.mode,
            systems=point.systems,
            batch=point.batch,
            time_limit_s=time_limit_s,
        )
    except CsConformError as exc:
        row["status"] = f"{type(exc).__name__}: {exc}"
        return row
    row.update(
        model=result.model,
        wafer=result.wafer,
        mode=result.mode,
        batch=result.batch,
        params=result.params,
        flops_per_sample=result.flops_per_sample,
        samples_per_s=result.samples_per_s,
        bound_samples_per_s=result.bound_samples_per_s,
        efficiency_vs_bound=result.samples_per_s / result.bound_samples_per_s,
    )
    return row


def _run_local(points: Sequence[Point], time_limit_s: float, progress: bool) -> Iterable[dict[str, Any]]:
    for point in tqdm(points, desc="sweep", unit="point", disable=not progress):
        yield evaluate(point, time_limit_s)


SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss")


def check_scheduler_address(address: str) -> str:
    """``address`` if it reads ``SCHEME://HOST:PORT`` with a scheme Dask connects over, else InvalidInputError."""
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:  # an unbalanced [ or a port out of range
        parts, port = urlsplit(""), None
    if parts.scheme not in SCHEDULER_SCHEMES or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise InvalidInputError(
            f"--scheduler {address!r}: expected a Dask scheduler address SCHEME://HOST:PORT "
            f"(scheme {', '.join(SCHEDULER_SCHEMES)}), e.g. tcp://127.0.0.1:8786"
        )
    return address


def _run_dask(
    points: Sequence[Point], scheduler: str, time_limit_s: float, progress: bool, connect_timeout_s: float
) -> list[dict[str, Any]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CsConformError(
            "a sweep on a Dask cluster needs the 'distributed' package: pip install 'csconform[cluster]'"
        ) from None
    check_scheduler_address(scheduler)
    try:
        client = Client(scheduler, timeout=f"{connect_timeout_s}s")
    except Exception as exc:  # noqa: BLE001 - whatever answers at that address (or nothing), it is no scheduler
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CsConformError(
            f"cannot reach the Dask scheduler at {scheduler!r} (waited {connect_timeout_s:g} s): {reason}"
        ) from None
    with client:
        futures = client.map(evaluate, points, time_limit_s=time_limit_s, pure=False)
        order = {future.key: index for index, future in enumerate(futures)}
        rows: list[dict[str, Any] | None] = [None] * len(points)
        done = tqdm(total=len(points), desc="sweep", unit="point", disable=not progress)
        for future in as_completed(futures):
            rows[order[future.key]] = future.result()
            done.update()
        done.close()
    return [row for row in rows if row is not None]


def run_sweep(
    points: Sequence[Point],
    scheduler: str | None = None,
    time_limit_s: float = 5.0,
    progress: bool = True,
    runner: Callable[..., Iterable[dict[str, Any]]] | None = None,
    connect_timeout_s: float = 10.0,
) -> pd.DataFrame:
    """Evaluate every point, locally or on the Dask scheduler at ``scheduler``; one row per point."""
    if not points:
        raise InvalidInputError("the design space is empty")
    if scheduler:
        rows = _run_dask(points, scheduler, time_limit_s, progress, connect_timeout_s)
    else:
        rows = list((runner or _run_local)(points, time_limit_s, progress))
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
