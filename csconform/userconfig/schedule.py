"""The configured LR schedule run through the reference engine: its key points, any step, a plot.

The schedule is built from :mod:`csconform.engine.optim.lr_scheduler`, the same closed forms the
engine trains with, so the rates ``validate`` prints are the engine's. The vendor's class names and
argument names map one to one onto the engine's, with three exceptions: MultiplicativeLR's
``coefficient`` is the engine's ``multiplier``; ConstantLR's ``total_iters`` only sets where the next
phase starts; ScalePerParamLR (muP's per-layer scaling) leaves the base rate to the scheduler it
wraps. A sequence of schedulers hands over at the running sums of its phases' ``total_iters``
(public-facts#LR schedules; the Model Zoo's ``compute_milestones``).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from csconform.arguments import is_integer
from csconform.engine.optim import lr_scheduler as engine
from csconform.errors import CsConformError, InvalidInputError
from csconform.output_guard import save_figure
from csconform.userconfig.description import SchedulerConfig
from csconform.userconfig.package_api import package_api

# Arguments the vendor's classes take that do not change the base rate of the run.
IGNORED_ARGUMENTS = {"param_group_tags", "last_epoch"}
RENAMED_ARGUMENTS = {"MultiplicativeLR": {"coefficient": "multiplier"}}
SEQUENTIAL = "SequentialLR"
WRAPPERS = ("ScalePerParamLR",)
# Steps evaluated one by one up to this many; a longer run is evaluated on an even grid of this size
# (first and last step included) plus every phase boundary and the step before it.
MAX_EVALUATED_STEPS = 1 << 20


class ScheduleNotRunnable(CsConformError):
    """The engine does not implement this scheduler or one of its arguments (a note, not a refusal)."""


@dataclass(frozen=True)
class Phase:
    name: str
    start_step: int
    length: int | None


@dataclass(frozen=True)
class Schedule:
    """An engine schedule and the phases it was built from (one phase for a single scheduler)."""

    function: engine.LRScheduler
    phases: tuple[Phase, ...]
    ignored: tuple[str, ...] = ()
    """Arguments left out because the release does not read them (flat layout only)."""

    def at(self, steps: list[int] | np.ndarray) -> np.ndarray:
        return np.asarray(self.function(np.asarray(steps, dtype=np.int64)), dtype=np.float64)


def _length(config: SchedulerConfig) -> int | None:
    setting = config.arguments.get("total_iters")
    return int(setting.value) if setting is not None and is_integer(setting.value) else None


def _engine_arguments(config: SchedulerConfig, cls: type, strict: bool) -> tuple[dict[str, Any], list[str]]:
    """The engine's keyword arguments, and the arguments left out (``strict``: none may be)."""
    accepted = set(inspect.signature(cls).parameters)
    vendor = package_api().lr_scheduler(config.name.value)
    renamed = RENAMED_ARGUMENTS.get(config.name.value, {})
    arguments: dict[str, Any] = {}
    ignored: list[str] = []
    for name, setting in config.arguments.items():
        target = renamed.get(name, name)
        if name in IGNORED_ARGUMENTS or (name == "total_iters" and target not in accepted):
            continue
        if target in accepted:
            arguments[target] = setting.value
        elif strict or (vendor is not None and name in vendor.arguments):
            raise ScheduleNotRunnable(
                f"{config.name.value} argument {name} ({setting.origin}) is not implemented by the reference engine"
            )
        else:
            ignored.append(f"{setting.origin.key}")
    return arguments, ignored


def build(config: SchedulerConfig, strict: bool = True) -> Schedule:
    """The engine schedule of ``config``; the engine's refusal of a value is its InvalidInputError.

    ``strict=False`` (the flat layout, whose releases read the arguments they know and ignore the
    rest) leaves out arguments that neither the engine nor the vendor's class takes."""
    name = config.name.value
    if name in WRAPPERS and len(config.children) == 1:
        return build(config.children[0], strict)
    if name == SEQUENTIAL:
        if not config.children:
            raise InvalidInputError(f"{name} ({config.origin}) has no schedulers")
        built = [build(child, strict) for child in config.children]
        lengths = [_length(child) for child in config.children[:-1]]
        known = [length for length in lengths if length is not None]
        if len(known) != len(lengths):
            raise ScheduleNotRunnable(f"{name} ({config.origin}): a phase before the last has no total_iters")
        milestones = list(itertools.accumulate(known))  # Python integers: the engine refuses a sum past int64
        starts = [0, *milestones]
        sequence = engine.SequentialLR([b.function for b in built], milestones)
        phases = tuple(
            Phase(child.name.value, int(start), _length(child))
            for child, start in zip(config.children, starts, strict=True)
        )
        return Schedule(sequence, phases, tuple(i for b in built for i in b.ignored))
    cls = getattr(engine, name, None)
    if not (isinstance(cls, type) and issubclass(cls, engine.LRScheduler)) or name == "LRScheduler":
        raise ScheduleNotRunnable(f"{name} ({config.origin}) is not implemented by the reference engine")
    arguments, ignored = _engine_arguments(config, cls, strict)
    try:
        function = cls(**arguments)
    except TypeError as exc:  # a required argument missing: the config's own refusal says which
        raise ScheduleNotRunnable(f"{name} ({config.origin}) cannot be built: {exc}") from None
    return Schedule(function, (Phase(name, 0, _length(config)),), tuple(ignored))


@dataclass(frozen=True)
class KeyPoints:
    """What a reader wants to know about a schedule over a run of ``steps`` steps."""

    steps: int
    first: float
    warmup_end: tuple[int, float] | None
    boundaries: tuple[tuple[int, str, float], ...]
    last: float
    minimum: float
    maximum: float
    evaluated_steps: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "first": self.first,
            "warmup_end": None if self.warmup_end is None else {"step": self.warmup_end[0], "lr": self.warmup_end[1]},
            "boundaries": [{"step": s, "phase": n, "lr": v} for s, n, v in self.boundaries],
            "last": {"step": self.steps - 1, "lr": self.last},
            "min": self.minimum,
            "max": self.maximum,
            "evaluated_steps": self.evaluated_steps,
        }


def evaluation_steps(schedule: Schedule, steps: int) -> np.ndarray:
    """Every step of the run, or an even grid when the run is very long (see MAX_EVALUATED_STEPS)."""
    if steps <= MAX_EVALUATED_STEPS:
        return np.arange(steps, dtype=np.int64)
    return np.linspace(0, steps - 1, MAX_EVALUATED_STEPS).astype(np.int64)


def _boundary_steps(schedule: Schedule, steps: int) -> list[int]:
    return sorted({p.start_step + d for p in schedule.phases[1:] for d in (-1, 0) if 0 <= p.start_step + d < steps})


def key_points(schedule: Schedule, steps: int) -> KeyPoints:
    """First and last rate, end of warm-up, the rate at each phase boundary, min and max."""
    grid = evaluation_steps(schedule, steps)
    rates = np.concatenate([schedule.at(grid), schedule.at(_boundary_steps(schedule, steps))])
    boundaries = tuple(
        (p.start_step, p.name, float(schedule.at([p.start_step])[0]))
        for p in schedule.phases[1:]
        if p.start_step < steps
    )
    warmup_end = None
    first_phase = schedule.phases[0]
    if first_phase.length and len(schedule.phases) > 1 and first_phase.length < steps:
        start, end = schedule.at([0, first_phase.length])
        if end > start:
            warmup_end = (first_phase.length, float(end))
    return KeyPoints(
        steps=steps,
        first=float(rates[0]),
        warmup_end=warmup_end,
        boundaries=boundaries,
        last=float(schedule.at([steps - 1])[0]),
        minimum=float(rates.min()),
        maximum=float(rates.max()),
        evaluated_steps=len(grid),
    )


def plot(
    schedule: Schedule, steps: int, path: Path, title: str, layer_factors: Sequence[tuple[str, float]] = ()
) -> None:
    """The learning rate at every step of the run (PNG), phase boundaries dashed; each group of layers
    that trains at a multiple of it (``layer_factors``: name, factor) as a line of its own."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = evaluation_steps(schedule, steps)
    figure, axes = plt.subplots(figsize=(8, 4))
    try:
        rates = schedule.at(grid)
        axes.plot(grid, rates, linewidth=1.2, label="schedule (base rate)")
        for layers, factor in layer_factors:
            axes.plot(grid, rates * factor, linewidth=0.9, linestyle="-.", label=f"{layers} (x{factor:.4g})")
        if layer_factors:
            axes.legend(fontsize=7)
        for phase in schedule.phases[1:]:
            if phase.start_step < steps:
                axes.axvline(phase.start_step, linestyle="--", linewidth=0.8, color="grey")
        axes.set_xlabel("global step")
        axes.set_ylabel("learning rate")
        axes.set_title(title, fontsize=10)
        axes.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
        figure.tight_layout()
        save_figure(figure, path, "--plot", dpi=120)
    finally:
        plt.close(figure)
