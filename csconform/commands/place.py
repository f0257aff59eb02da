"""``csconform place``: solve an ISPD 2020 ``.kgraph`` instance and write JSON.

    csconform place A.kgraph --json A.json [--time-limit 60] [--no-gp-bound]

Prints a one-line summary (slowest time, the README's bound, bound/achieved, wire length) and
writes the placement (see :mod:`csconform.perf.placement.ispd.solution` for the format).  The placement is checked by
the independent checker before it is written; an illegal one is refused, never written.
"""

from __future__ import annotations

import argparse
import time

from csconform.arguments import positive_seconds
from csconform.perf.placement import checker
from csconform.perf.placement.ispd.instance import parse_kgraph
from csconform.perf.placement.ispd.solution import write_json
from csconform.perf.placement.ispd.solver import solve


def run(arguments: argparse.Namespace) -> int:
    """Handler of ``place``: parse, solve, check, write; returns the exit code."""
    started = time.perf_counter()  # the time limit covers reading the instance too
    instance = parse_kgraph(arguments.instance)
    solution = solve(
        instance, time_limit_s=arguments.time_limit, with_gp_bound=not arguments.no_gp_bound, started=started
    )
    kernels = [{"name": k.name, "type": k.type, "args": k.args} for k in instance.kernels]
    document = solution.to_json()
    checker.assert_legal(checker.ispd_violations(kernels, document, instance.width, instance.height, instance.memlimit))
    if arguments.json:
        write_json(solution, arguments.json)
    print(
        f"{instance.name}: {len(instance.kernels)} kernels, max_time {solution.max_time:g}, "
        f"lower_bound {solution.lower_bound:.6g}, bound/achieved {solution.bound_ratio:.3f}, "
        f"wirelength {solution.wirelength:g}, {solution.solve_s:.1f} s"
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("instance", help="path to a .kgraph file")
    parser.add_argument("--json", metavar="OUT", help="write the placement as JSON to OUT")
    parser.add_argument(
        "--time-limit", type=positive_seconds, default=60.0, metavar="SECONDS", help="solver budget (default 60)"
    )
    parser.add_argument("--no-gp-bound", action="store_true", help="skip the cvxpy relaxation bound")
    parser.set_defaults(handler=run, reads=("instance",), writes={"json": {}})
