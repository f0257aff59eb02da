"""The ISPD 2020 report: every public instance solved, checked and tabulated, plus placement maps.

For each of the twenty instances the solver (:mod:`csconform.perf.placement.ispd.solver`) runs within
the time limit, the independent checker (:mod:`csconform.perf.placement.checker`) validates the
placement (an illegal one stops the report), and one row records the slowest kernel's time against
three lower bounds: the README's area bound (the contest's figure of merit, bound / achieved), the
cvxpy relaxation and the shape bound.  Output: ``ispd2020.md`` (pandas + tabulate), ``ispd2020.csv``
and ``figures/ispd_*.png`` (matplotlib, Agg), the placement maps drawn by
:mod:`csconform.perf.placement.fabric_map`.

The instances are read from ``$CSCONFORM_ISPD_DIR`` if set, else from the copy kept with the tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from csconform.errors import InvalidInputError  # noqa: E402
from csconform.output_guard import write_csv, write_text  # noqa: E402
from csconform.perf.figures import write_figure  # noqa: E402
from csconform.perf.placement import checker  # noqa: E402
from csconform.perf.placement.fabric_map import Region, fabric_map  # noqa: E402
from csconform.perf.placement.ispd.instance import BUNDLED_INSTANCES, parse_kgraph  # noqa: E402
from csconform.perf.placement.ispd.solution import IspdSolution  # noqa: E402
from csconform.perf.placement.ispd.solver import solve  # noqa: E402

INSTANCE_DIR_VARIABLE = "CSCONFORM_ISPD_DIR"
MAP_INSTANCES = ("A", "M")


def instance_dir() -> Path:
    """Where the ``.kgraph`` files are: $CSCONFORM_ISPD_DIR, else the copy shipped with the package."""
    configured = os.environ.get(INSTANCE_DIR_VARIABLE)
    directory = Path(configured) if configured else BUNDLED_INSTANCES
    if not sorted(directory.glob("*.kgraph")):
        raise InvalidInputError(f"no .kgraph instances in {directory}; set {INSTANCE_DIR_VARIABLE}")
    return directory


def solve_all(directory: Path, time_limit_s: float) -> list[IspdSolution]:
    """Solve every instance and refuse (PlacementError) any placement the checker finds illegal."""
    solutions = []
    for path in sorted(directory.glob("*.kgraph")):
        instance = parse_kgraph(path)
        solution = solve(instance, time_limit_s=time_limit_s)
        kernels = [{"name": k.name, "type": k.type, "args": k.args} for k in instance.kernels]
        violations = checker.ispd_violations(
            kernels, solution.to_json(), instance.width, instance.height, instance.memlimit
        )
        checker.assert_legal([f"{instance.name}: {v}" for v in violations])
        solutions.append(solution)
    return solutions


def ispd_table(solutions: list[IspdSolution]) -> pd.DataFrame:
    rows = []
    for solution in solutions:
        instance = solution.instance
        rows.append(
            {
                "instance": instance.name,
                "kernels": len(instance.kernels),
                "max_time": solution.max_time,
                "lower_bound": solution.lower_bound,
                "bound/achieved": solution.bound_ratio,
                "gp_lower_bound": solution.gp_lower_bound,
                "shape_lower_bound": solution.shape_lower_bound,
                "shape_bound/achieved": solution.shape_lower_bound / solution.max_time,
                "wirelength": solution.wirelength,
                "solve_s": solution.solve_s,
                "legal": True,  # solve_all refuses illegal placements
            }
        )
    return pd.DataFrame(rows)


def geometric_mean(values: pd.Series) -> float:
    return float(np.exp(np.log(values.astype(float)).mean()))


def placement_map(solution: IspdSolution, path: Path) -> Path:
    """The fabric with one rectangle per kernel, shaded by its time relative to the slowest."""
    instance = solution.instance
    regions = [
        Region(
            entry["name"], entry["x"], entry["y"], entry["width"], entry["height"], entry["time"] / solution.max_time
        )
        for entry in solution.kernels
    ]
    title = (
        f"ISPD 2020 {instance.name}: {len(instance.kernels)} kernels, slowest {solution.max_time:g}, "
        f"bound/achieved {solution.bound_ratio:.3f}"
    )
    return write_figure(
        fabric_map(regions, instance.width, instance.height, title, "kernel time / slowest kernel time"), path
    )


def ratio_chart(table: pd.DataFrame, path: Path) -> Path:
    """bound/achieved per instance, for the README's bound and the shape bound."""
    figure, axes = plt.subplots(figsize=(8, 3.5))
    positions = np.arange(len(table))
    axes.bar(positions - 0.2, table["bound/achieved"], width=0.4, label="README area bound / achieved")
    axes.bar(positions + 0.2, table["shape_bound/achieved"], width=0.4, label="shape bound / achieved")
    axes.axhline(0.8, color="grey", linestyle="--", linewidth=0.8)
    axes.set_xticks(positions, table["instance"])
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("bound / achieved")
    axes.legend(fontsize=8, loc="lower right")
    return write_figure(figure, path)


def markdown(table: pd.DataFrame, time_limit_s: float) -> str:
    shown = table[
        [
            "instance",
            "kernels",
            "max_time",
            "lower_bound",
            "bound/achieved",
            "shape_bound/achieved",
            "wirelength",
            "solve_s",
        ]
    ]
    at_floor = table.loc[table["shape_bound/achieved"] >= 1 - 1e-5, "instance"].tolist()
    relaxed = (table["gp_lower_bound"] / table["max_time"]).dropna()
    relaxation = f"{geometric_mean(relaxed):.3f} over {len(relaxed)} instances" if len(relaxed) else "not computed"
    far_from_readme = table.loc[table["shape_lower_bound"] > 1.25 * table["lower_bound"], "instance"].tolist()
    lines = [
        "# Cerebras ISPD 2020 kernel placement",
        "",
        "Generated by `csconform.report.ispd` (do not edit by hand). Every placement below was validated by",
        "the independent checker (bounds, overlap, memlimit, cost model recomputed).",
        "",
        f"- instances: {len(table)}, all legal; time limit {time_limit_s:g} s each, "
        f"slowest solve {table['solve_s'].max():.1f} s",
        f"- geometric mean of README bound / achieved: **{geometric_mean(table['bound/achieved']):.3f}** "
        "(target >= 0.80)",
        f"- geometric mean of shape bound / achieved: **{geometric_mean(table['shape_bound/achieved']):.3f}**; "
        f"of the cvxpy relaxation bound / achieved: {relaxation}",
        "- at a proven optimum (achieved = shape bound): " + (", ".join(at_floor) if at_floor else "none"),
        "",
        "Bounds: `lower_bound` is the README's (sum of 3 H W C K R S / (T U) over all convolutions, over",
        "the fabric area). The shape bound is the smallest time at which every kernel has a legal shape",
        "and the least legal areas fit the fabric (it bounds every legal solution). Where it exceeds the",
        "README's bound by more than 1.25x, no solution can reach 0.80 on that instance: a kernel's",
        "shortest legal time is limited by the fabric's side, the c + 1 rows and the memory limit.",
        "Instances where that holds: " + (", ".join(far_from_readme) if far_from_readme else "none") + ".",
        "Wire length: L1 distance between the centres of connected kernels; input/output nodes excluded.",
        "",
        shown.to_markdown(index=False, floatfmt=("", "", ".6g", ".6g", ".4f", ".4f", ".6g", ".2f")),
        "",
        "![bound ratios](figures/ispd_ratios.png)",
        "",
    ]
    solved = set(table["instance"])
    lines += [f"![placement {name}](figures/ispd_map_{name}.png)" for name in MAP_INSTANCES if name in solved]
    return "\n".join(lines) + "\n"


def write_ispd_report(out: Path, time_limit_s: float = 20.0, directory: Path | None = None) -> list[Path]:
    """Solve all instances and write the markdown, the CSV and the figures into ``out``."""
    out = Path(out)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    solutions = solve_all(directory or instance_dir(), time_limit_s)
    table = ispd_table(solutions)
    written = [out / "ispd2020.csv", out / "ispd2020.md"]
    write_csv(table, written[0], index=False)
    write_text(written[1], markdown(table, time_limit_s), encoding="utf-8")
    written.append(ratio_chart(table, figures / "ispd_ratios.png"))
    for solution in solutions:
        if solution.instance.name in MAP_INSTANCES:
            written.append(placement_map(solution, figures / f"ispd_map_{solution.instance.name}.png"))
    return written
