"""The vectorised ISPD shape search against brute force, and the parser on the real instances."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import numpy as np
import pytest

from csconform.errors import InfeasibleError, InstanceFormatError, InvalidInputError
from csconform.perf.placement import checker
from csconform.perf.placement.ispd.bounds import area_lower_bound
from csconform.perf.placement.ispd.cost import ShapeCatalogue, least_areas, shape_grid
from csconform.perf.placement.ispd.instance import (
    BUNDLED_INSTANCES,
    Convolution,
    Kernel,
    block_convolutions,
    parse_kgraph,
    parse_kgraph_text,
)
from csconform.perf.placement.ispd.solver import pipeline_order, solve

INSTANCES = BUNDLED_INSTANCES


@functools.cache
def every_shape(position: int, memlimit: int, side: int) -> np.ndarray:
    """(time, area) of every legal shape of SMALL_KERNELS[position] that fits a side x side fabric.

    Uses the independent checker's plain-integer cost model, so the two implementations meet here.
    """
    kernel = SMALL_KERNELS[position]
    as_dict = {"type": kernel.type, "args": kernel.args}
    convs = kernel.convolutions
    rows = []
    h_range = range(1, max(cv.H for cv in convs) + 2)
    w_range = range(1, max(cv.W for cv in convs) + 2)
    c_ranges = [range(1, cv.C + 2) for cv in convs]
    k_ranges = [range(1, cv.K + 2) for cv in convs]
    for h, w in itertools.product(h_range, w_range):
        for c in itertools.product(*c_ranges):
            for k in itertools.product(*k_ranges):
                cost = checker.ispd_kernel_cost(as_dict, h, w, c, k)
                if cost["memory"] <= memlimit and max(cost["height"], cost["width"]) <= side:
                    rows.append((cost["time"], cost["height"] * cost["width"]))
    return np.array(rows)


SMALL_KERNELS = [
    Kernel(0, "c", "conv", dict(H=6, W=5, R=3, S=3, C=5, K=4, T=2, U=2), (Convolution(6, 5, 3, 3, 5, 4, 2, 2),)),
    Kernel(1, "d", "dblock", dict(f=4, h=3, w=2), block_convolutions("dblock", 4, 3, 2)),
    Kernel(2, "b", "cblock", dict(f=4, h=2, w=2), block_convolutions("cblock", 4, 2, 2)),
]


@pytest.mark.parametrize("position", range(len(SMALL_KERNELS)), ids=[k.type for k in SMALL_KERNELS])
@pytest.mark.parametrize("target", [2.0, 6.0, 20.0, 45.0, 400.0])
def test_shape_grid_finds_the_least_area_brute_force_finds(position: int, target: float) -> None:
    memlimit, side = 30, 40
    grid = shape_grid(SMALL_KERNELS[position], memlimit, side)
    vectorised = least_areas(ShapeCatalogue.of([grid]), target, side, side)[0]
    shapes = every_shape(position, memlimit, side)
    fast_enough = shapes[shapes[:, 0] <= target]
    assert vectorised == (fast_enough[:, 1].min() if len(fast_enough) else np.inf)


def test_all_twenty_instances_parse() -> None:
    counts = {}
    for path in sorted(INSTANCES.glob("*.kgraph")):
        instance = parse_kgraph(path)
        assert (instance.width, instance.height, instance.memlimit) == (633, 633, 24576)
        counts[instance.name] = len(instance.kernels)
        kernel_indices = {k.index for k in instance.kernels}
        assert all(a in kernel_indices | set(instance.terminals) for a, _ in instance.edges)
    assert len(counts) == 20
    assert counts["A"] == 16 and counts["C"] == 100 and counts["N"] == 26


def test_header_weights_and_terminals() -> None:
    instance = parse_kgraph(INSTANCES / "K.kgraph")
    assert instance.weights == {"wdeltat": 1.0, "wlength": 4.0, "wadapter": 0.0}
    assert instance.terminals == {0: "input", 17: "output"}
    assert instance.kernels[0].args == {"f": 128, "h": 14, "w": 14}
    assert len(instance.kernels[0].convolutions) == 4


def test_pipeline_order_follows_the_chain() -> None:
    instance = parse_kgraph(INSTANCES / "A.kgraph")
    names = [instance.kernels[i].name for i in pipeline_order(instance)]
    assert names[:4] == ["k4", "k16", "k15", "k3"]
    assert names[-2:] == ["k6", "k5"]


def test_area_lower_bound_is_the_readme_sum() -> None:
    instance = parse_kgraph_text(
        "(* width=10 height=20 memlimit=100 *)\nconv[1] W=2 H=3 R=1 S=1 C=4 K=5 T=1 U=1 name='a'\n", "x.kgraph"
    )
    assert area_lower_bound(instance) == pytest.approx(3 * 2 * 3 * 4 * 5 / 200)


@pytest.mark.parametrize("name", ["A", "C", "M", "N"])
def test_the_checker_recomputes_the_same_readme_bound(name: str) -> None:
    instance = parse_kgraph(INSTANCES / f"{name}.kgraph")
    kernels = [{"name": k.name, "type": k.type, "args": k.args} for k in instance.kernels]
    assert checker.ispd_area_bound(kernels, instance.width, instance.height) == pytest.approx(
        area_lower_bound(instance), rel=1e-12
    )


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("", 1, "width"),
        ("(* width=10 height=10 *)\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 U=1 name='a'\n", 1, "memlimit"),
        ("(* width=10 height=10 memlimit=0 *)\n", 1, "outside"),
        ("(* width=10 height=10 memlimit=9 *)\n", 1, "no kernels"),
        ("(* width=10 height=10 memlimit=9 *)\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 name='a'\n", 2, "exactly"),
        ("(* width=10 height=10 memlimit=9 *)\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 U=1\n", 2, "name"),
        ("(* width=10 height=10 memlimit=9 *)\ndblock[1] f=6 h=2 w=2 name='a'\n", 2, "multiple of 4"),
        ("(* width=10 height=10 memlimit=9 *)\ncblock[1] f=8 h=3 w=2 name='a'\n", 2, "even"),
        ("(* width=10 height=10 memlimit=9 *)\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 U=1 name='a' junk\n", 2, "junk"),
        (
            "(* width=10 height=10 memlimit=9 *)\n\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 U=1 name='a'\n"
            "conv[1]:y -> conv[1]:x, shape:[1][1][1]\n",
            4,
            "itself",
        ),
        ("(* width=10 height=10 memlimit=9 *)\nconv[1] W=1 H=1 R=1 S=1 C=1 K=1 T=1 U=1 name='a'\n*)\n", 3, "opening"),
        ("(* width=10 height=10 memlimit=9 wlength=x *)\n", 1, "not a number"),
    ],
)
def test_format_errors_name_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(InstanceFormatError, match=words) as caught:
        parse_kgraph_text(text, "f.kgraph")
    assert str(caught.value).startswith(f"f.kgraph:{line}:")


def test_unreadable_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="missing.kgraph: file not found"):
        parse_kgraph(tmp_path / "missing.kgraph")


def test_a_kernel_over_the_memory_limit_is_infeasible() -> None:
    instance = parse_kgraph_text(
        "(* width=20 height=20 memlimit=5 *)\nconv[1] W=9 H=9 R=3 S=3 C=64 K=64 T=1 U=1 name='a'\n", "m.kgraph"
    )
    with pytest.raises(InfeasibleError, match="memlimit"):
        solve(instance, time_limit_s=5, with_gp_bound=False)


def test_solve_refuses_a_non_positive_time_limit() -> None:
    instance = parse_kgraph(INSTANCES / "A.kgraph")
    with pytest.raises(InvalidInputError):
        solve(instance, time_limit_s=0)
