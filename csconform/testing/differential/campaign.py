"""A campaign: every area explored over a range of seeds, the classes merged, each given a minimal repro.

The work is a list of independent tasks, (area, seed) explorations and then one shrink per class,
so it runs anywhere a function can be mapped: in this process, in a few local worker processes
(``jobs``), or on a Dask cluster given its scheduler address, as ``csconform sweep`` does. A class
seen with several seeds is shrunk from its first occurrence (the lowest seed, then the earliest
example), so the result does not depend on how the tasks were spread. A class its triage already
explains keeps the repro the entry stores, when that still shows it: only new classes are shrunk.

Profiles fix the budget: ``ci`` is bounded and derandomized (fixed seeds, a few thousand examples in
all, a bounded number of programs to shrink each class with), ``nightly`` explores ten times as many
examples per seed over eight seeds, and shrinks longer. A long campaign gives more seeds
(``--seeds 0-999``) to a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context
from typing import Any, TypeVar

from csconform.errors import CsConformError, InvalidInputError
from csconform.testing.differential.areas import AREA_NAMES, get_area
from csconform.testing.differential.explore import (
    Exploration,
    Finding,
    Occurrence,
    Pair,
    compared,
    explore,
    implementations,
)
from csconform.testing.differential.implementation import Workdirs
from csconform.testing.differential.lockstep import Difference, run_lockstep
from csconform.testing.differential.program import Program
from csconform.testing.differential.shrink import NotReproduced, Shrunk, shrink
from csconform.testing.differential.signature import Signature


@dataclass(frozen=True)
class Profile:
    name: str
    examples: Mapping[str, int]
    """Examples per area and seed."""
    seeds: tuple[int, ...]
    shrink_examples: int
    """Programs Hypothesis may run to shrink a class (counted, not timed, so that a repro does not
    depend on the machine's load; the statement-by-statement pass that follows runs to its end)."""


_CI_EXAMPLES = {
    "grad_scaler": 500,
    "lr_schedule": 600,
    "optimizer": 400,
    "precision": 300,
    "data": 200,
    "checkpoint": 150,
}
PROFILES = {
    "ci": Profile("ci", _CI_EXAMPLES, (0, 1), 200),
    "nightly": Profile("nightly", {area: 10 * count for area, count in _CI_EXAMPLES.items()}, tuple(range(8)), 2000),
}


@dataclass(frozen=True)
class ExploreTask:
    area: str
    pair: Pair
    seed: int
    examples: int


@dataclass(frozen=True)
class ShrinkTask:
    signature: Signature
    pair: Pair
    first: Occurrence
    examples: int
    shrink_examples: int


def run_explore(task: ExploreTask) -> Exploration:
    return explore(task.area, task.pair, task.seed, task.examples)


def run_shrink(task: ShrinkTask) -> Shrunk | None:
    """The class shrunk, or None when it did not show again (the campaign reports it as flaky)."""
    try:
        return shrink(task.signature, task.pair, task.first, task.examples, task.shrink_examples)
    except NotReproduced:
        return None


@dataclass
class AreaSummary:
    name: str
    title: str
    not_compared: str = ""
    """Why the area was not compared (an implementation lacks a capability), or ''."""
    examples: int = 0
    statements: int = 0
    unsupported: int = 0
    seconds: float = 0.0

    @property
    def examples_per_s(self) -> float:
        return self.examples / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class FoundClass:
    """A class of the campaign: where it first showed, in how many programs, and its minimal repro."""

    signature: Signature
    first: Occurrence
    programs: int
    repro: Program
    difference: Difference
    shrink_seconds: float
    reproduced: bool = True
    """False: the class did not show again when its first program was run again (the run fails)."""
    shrunk: bool = True
    """False: the repro is the one its triage entry stores (checked again in this run), not shrunk anew."""


@dataclass
class Campaign:
    pair: Pair
    versions: tuple[str, str]
    profile: str
    seeds: tuple[int, ...]
    areas: dict[str, AreaSummary] = field(default_factory=dict)
    classes: list[FoundClass] = field(default_factory=list)
    seconds: float = 0.0


T = TypeVar("T")
R = TypeVar("R")


def _map_local(function: Callable[[T], R], tasks: Sequence[T], jobs: int, progress: Callable[[str], None]) -> list[R]:
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(function(task))
            progress(_describe(task))
        return results
    # spawn: a worker imports the implementations itself (a forked torch is not safe to use)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(function, tasks))
    for task in tasks:
        progress(_describe(task))
    return results


def _map_dask(function: Callable[[T], R], tasks: Sequence[T], client: Any, progress: Callable[[str], None]) -> list[R]:
    from distributed import as_completed

    futures = client.map(function, list(tasks), pure=False)
    order = {future.key: index for index, future in enumerate(futures)}
    results: list[Any] = [None] * len(tasks)
    for future in as_completed(futures):
        index = order[future.key]
        results[index] = future.result()
        progress(_describe(tasks[index]))
    return results


def _describe(task: Any) -> str:
    if isinstance(task, ExploreTask):
        return f"explored {task.area} with seed {task.seed} ({task.examples} examples)"
    return f"shrunk {task.signature}"


def _connect(scheduler: str, timeout_s: float) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise CsConformError(
            "a campaign on a Dask cluster needs the 'distributed' package: pip install 'csconform[cluster]'"
        ) from None
    try:
        return Client(scheduler, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError) as exc:
        raise CsConformError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


def _merge(campaign: Campaign, explorations: Iterable[Exploration]) -> dict[Signature, Finding]:
    findings: dict[Signature, Finding] = {}
    for exploration in explorations:
        summary = campaign.areas[exploration.area]
        summary.examples += exploration.examples
        summary.statements += exploration.statements
        summary.unsupported += exploration.unsupported
        summary.seconds += exploration.seconds
        for signature, finding in exploration.findings.items():
            known = findings.get(signature)
            if known is None:
                findings[signature] = replace(finding)
                continue
            total = known.programs + finding.programs
            if (finding.first.seed, finding.first.example) < (known.first.seed, known.first.example):
                known = findings[signature] = replace(finding)
            known.programs = total
    return findings


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-7"``, ``"3"`` or ``"0,2,5"`` as a tuple of seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            seeds += range(int(low), int(high or low) + 1)
    except ValueError:
        raise InvalidInputError(f"seeds are integers or ranges like 0-7, comma-separated; got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise InvalidInputError(f"seeds must be non-negative integers, got {text!r}")
    return tuple(dict.fromkeys(seeds))


def _known(finding: Finding, repro: Program | None, pair: Pair) -> FoundClass | None:
    """The class with its triage entry's repro, if that repro still shows it (then it needs no shrinking)."""
    if repro is None:
        return None
    a, b = implementations(pair)
    with Workdirs() as workdirs:
        run = run_lockstep(repro, a, b, workdirs)
    difference = next((d for d in run.differences if d.signature == finding.signature), None)
    if difference is None:
        return None
    return FoundClass(finding.signature, finding.first, finding.programs, repro, difference, 0.0, shrunk=False)


def run_campaign(
    pair: Pair,
    profile: Profile,
    areas: Sequence[str] = AREA_NAMES,
    seeds: Sequence[int] | None = None,
    examples: int | None = None,
    scheduler: str | None = None,
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
    scheduler_timeout_s: float = 10.0,
    shrink_examples: int | None = None,
    known_repros: Mapping[Signature, Program] | None = None,
) -> Campaign:
    """Explore ``areas`` with the profile's seeds (or ``seeds``), and give every class found a minimal
    repro: the one its triage entry stores (``known_repros``) if that still shows it, else a shrunk one."""
    started = time.perf_counter()
    a, b = implementations(pair)
    seeds = tuple(seeds if seeds is not None else profile.seeds)
    campaign = Campaign(pair, (a.version, b.version), profile.name, seeds)
    tasks = []
    for name in areas:
        area = get_area(name)
        campaign.areas[name] = AreaSummary(name, area.title, compared(area, a, b))
        if not campaign.areas[name].not_compared:
            count = examples if examples is not None else profile.examples[name]
            tasks += [ExploreTask(name, pair, seed, count) for seed in seeds]
    if all(summary.not_compared for summary in campaign.areas.values()):
        reasons = "; ".join(f"{name}: {summary.not_compared}" for name, summary in campaign.areas.items())
        raise InvalidInputError(
            f"no area asked for can be compared ({reasons}): name an area both implementations offer"
        )
    client = _connect(scheduler, scheduler_timeout_s) if scheduler else None
    try:

        def mapped(function: Callable[[T], R], work: Sequence[T]) -> list[R]:
            if client is not None:
                return _map_dask(function, work, client, progress)
            return _map_local(function, work, jobs, progress)

        findings = _merge(campaign, mapped(run_explore, tasks))
        examples_of = {(task.area, task.seed): task.examples for task in tasks}
        budget = profile.shrink_examples if shrink_examples is None else shrink_examples
        shrink_tasks = []
        for finding in sorted(findings.values(), key=lambda f: f.signature):
            known = _known(finding, (known_repros or {}).get(finding.signature), pair)
            if known is not None:
                campaign.classes.append(known)
                continue
            examples_run = examples_of[(finding.signature.area, finding.first.seed)]
            shrink_tasks.append(ShrinkTask(finding.signature, pair, finding.first, examples_run, budget))
        for task, shrunk in zip(shrink_tasks, mapped(run_shrink, shrink_tasks), strict=True):
            finding = findings[task.signature]
            if shrunk is None:
                found = FoundClass(
                    task.signature, finding.first, finding.programs, finding.program, finding.difference, 0.0, False
                )
            else:
                found = FoundClass(
                    task.signature, finding.first, finding.programs, shrunk.program, shrunk.difference, shrunk.seconds
                )
            campaign.classes.append(found)
        campaign.classes.sort(key=lambda found: found.signature)
    finally:
        if client is not None:
            client.close()
    campaign.seconds = time.perf_counter() - started
    return campaign
