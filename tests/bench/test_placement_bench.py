"""Placement benchmarks: place_kernels as the kernel count grows, and the ISPD 2020 instances.

Solve time is what pytest-benchmark measures; the quality of each placement (bound / achieved and
the slowest kernel's cycles) goes into ``extra_info``.  Every placement is validated by the
independent checker, so a fast but illegal result fails the benchmark.  Targets: 1000 kernels in
<= 10 s; every ISPD 2020 instance in <= 10 s of the solving process's CPU time (wall time, also
recorded, depends on what else the shared machine runs).  The twenty instances run once each
(round = 1) with the solver's own 60 s limit, so the time measured is the time the algorithm needs,
not a cut-off.  README bound / achieved and shape bound / achieved are recorded per instance; over
all twenty the geometric means must reach 0.80 (PLACE-012, also checked in the conformance suite)
and stay at or above 0.9838, what the solver reached before it was made faster (issue 11).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from csconform.perf.placement import checker
from csconform.perf.placement.columns import Fabric, KernelDemand, place_kernels
from csconform.perf.placement.ispd.instance import BUNDLED_INSTANCES, parse_kgraph
from csconform.perf.placement.ispd.solution import IspdSolution
from csconform.perf.placement.ispd.solver import solve

WSE2 = Fabric(width=750, height=994, memory_per_core_bytes=48 * 1024)
INSTANCES = BUNDLED_INSTANCES
ISPD_RATIOS: dict[str, float] = {}  # README bound / achieved
ISPD_SHAPE_RATIOS: dict[str, float] = {}  # shape bound / achieved


def demands(count: int, seed: int = 0) -> list[KernelDemand]:
    rng = np.random.default_rng(seed)
    work = rng.lognormal(mean=14, sigma=1.5, size=count)
    memory = rng.dirichlet(np.ones(count)) * 0.4 * WSE2.cores * WSE2.memory_per_core_bytes
    return [KernelDemand(f"k{i}", float(work[i]), float(memory[i])) for i in range(count)]


@pytest.mark.parametrize("count", [50, 100, 250, 500, 1000])
def test_place_kernels_scaling(benchmark, count: int) -> None:
    kernels = demands(count)
    edges = [(i, i + 1, 1e5) for i in range(count - 1)]
    placement = benchmark.pedantic(place_kernels, args=(kernels, WSE2, edges), rounds=3, iterations=1)
    memory = [d.memory_bytes for d in kernels]
    violations = checker.placement_violations(
        placement.rects, WSE2.width, WSE2.height, WSE2.memory_per_core_bytes, memory
    )
    assert violations == []
    benchmark.extra_info.update(
        kernels=count,
        bound_ratio=placement.bound_ratio,
        area_bound_ratio=placement.area_bound_cycles_per_sample / placement.slowest_cycles_per_sample,
        slowest_cycles_per_sample=placement.slowest_cycles_per_sample,
        columns=placement.columns,
    )
    if count == 1000:
        assert benchmark.stats.stats.max <= 10.0


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.kgraph")), ids=lambda p: p.stem)
def test_ispd2020_instance(benchmark, path: Path) -> None:
    instance = parse_kgraph(path)
    cpu_s: list[float] = []

    def timed_solve() -> IspdSolution:
        started = time.process_time()
        solution = solve(instance, time_limit_s=60.0)
        cpu_s.append(time.process_time() - started)
        return solution

    solution = benchmark.pedantic(timed_solve, rounds=1, iterations=1)
    kernels = [{"name": k.name, "type": k.type, "args": k.args} for k in instance.kernels]
    assert (
        checker.ispd_violations(kernels, solution.to_json(), instance.width, instance.height, instance.memlimit) == []
    )
    assert solution.max_time >= solution.lower_bound
    ISPD_RATIOS[instance.name] = solution.bound_ratio
    ISPD_SHAPE_RATIOS[instance.name] = solution.shape_lower_bound / solution.max_time
    benchmark.extra_info.update(
        instance=instance.name,
        kernels=len(instance.kernels),
        max_time=solution.max_time,
        lower_bound=solution.lower_bound,
        bound_ratio=solution.bound_ratio,
        shape_bound_ratio=ISPD_SHAPE_RATIOS[instance.name],
        wirelength=solution.wirelength,
        cpu_s=cpu_s[0],
    )
    assert cpu_s[0] <= 10.0


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_ispd2020_geometric_mean(benchmark) -> None:
    """Runs after the twenty instances (file order); the means are over the ratios they recorded."""
    if len(ISPD_RATIOS) < 20:
        pytest.skip("needs the twenty instance benchmarks in the same run")
    mean = benchmark(lambda: geometric_mean(list(ISPD_RATIOS.values())))
    shape_mean = geometric_mean(list(ISPD_SHAPE_RATIOS.values()))
    benchmark.extra_info.update(
        geometric_mean_bound_ratio=mean, geometric_mean_shape_bound_ratio=shape_mean, instances=len(ISPD_RATIOS)
    )
    assert mean >= 0.80
    assert shape_mean >= 0.9838
