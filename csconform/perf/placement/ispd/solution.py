"""An ISPD 2020 solution: the placed kernels with their figures, its JSON form and its writer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from csconform.output_guard import write_text
from csconform.perf.placement.ispd.instance import Instance


@dataclass
class IspdSolution:
    instance: Instance
    kernels: list[dict]
    max_time: float
    lower_bound: float
    wirelength: float
    solve_s: float
    shape_lower_bound: float
    gp_lower_bound: float | None = None
    orders_tried: int = 0

    @property
    def bound_ratio(self) -> float:
        """README bound / achieved slowest time (1.0 = at the bound)."""
        return self.lower_bound / self.max_time

    def to_json(self) -> dict:
        document = {
            "instance": self.instance.name,
            "kernels": self.kernels,
            "max_time": self.max_time,
            "lower_bound": self.lower_bound,
            "wirelength": self.wirelength,
            "solve_s": round(self.solve_s, 3),
        }
        if self.gp_lower_bound is not None:
            document["gp_lower_bound"] = self.gp_lower_bound
        document["shape_lower_bound"] = self.shape_lower_bound
        return document


def wirelength(instance: Instance, kernels: list[dict]) -> float:
    """Sum of L1 distances between centres of connected kernels (input/output lines left out)."""
    by_index = {kernel.index: entry for kernel, entry in zip(instance.kernels, kernels, strict=True)}
    total = 0.0
    for src, dst in instance.edges:
        if src in by_index and dst in by_index:
            a, b = by_index[src], by_index[dst]
            total += abs((a["x"] + a["width"] / 2) - (b["x"] + b["width"] / 2))
            total += abs((a["y"] + a["height"] / 2) - (b["y"] + b["height"] / 2))
    return total


def write_json(solution: IspdSolution, path: str | Path) -> None:
    write_text(path, json.dumps(solution.to_json(), indent=1) + "\n", "--json")
