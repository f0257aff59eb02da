"""Cerebras' ISPD 2020 kernel-placement instances: parser, cost model, solver and JSON writer.

An instance (``.kgraph``, see ``benchmarks/ispd2020/README.md``) lists the kernels of a network;
each kernel is one convolution (``conv``) or a block of three (``dblock``) or four (``cblock``)
convolutions.  A solution picks execution parameters (``h, w`` shared by a kernel, one ``c, k``
per convolution), which fix the kernel's rectangle and its time, and places the rectangles
(optionally rotated by 90 degrees) on the fabric without overlap.  The figure of merit is the
slowest kernel's time; the README's area bound says how far from optimal a solution can be.

Solver:

1. **Shapes for a target time** (vectorised with numpy).  For every kernel a grid of candidate
   ``(h, w, c_max)`` is enumerated once: only the values where a ceiling changes matter
   (``h = ceil(H/q)`` for q = 1..H, the same for ``w`` and ``c``), and only shapes that fit the
   fabric.  Each convolution of the kernel takes ``c_i = min(c_max, C_i)`` (a larger ``c`` never
   hurts time or memory and the height is set by ``c_max`` anyway); for a target time ``t`` the
   narrowest ``k_i`` meeting both the time and the memory limit follows in closed form.  The grids
   of all kernels are stacked in one :class:`ShapeCatalogue`, so a target is one numpy pass.
2. **Shelves.**  Kernels in pipeline order (a depth-first topological order of the connectivity)
   go into horizontal shelves, filled alternately left-to-right and right-to-left so that
   neighbours in the pipeline stay close.  Given every kernel's narrowest shape under each height
   cap (both rotations), :class:`csconform.perf.legalize.ShelfTable` splits the order into shelves
   of least total height.
3. **Bisection on t**: the smallest target at which the shelves of some kernel order (the
   pipeline's, by area, by height, a few random ones) fit the fabric height.  The shapes at a
   target do not depend on the order, so each step builds them once for every order.
4. **Local search**, level after level: reorder the kernels (swaps and moves) until the shelves
   fit at the next faster time; then, at the time reached, move kernels next to the ones they are
   connected to while the wires get shorter.  Both stop after a number of moves without progress
   (``patience``); the time limit is only a safety net.

Bounds: :func:`area_lower_bound` is the README's bound, sum over convolutions of
``3 H W C K R S / (T U)`` divided by the fabric area.  :func:`gp_lower_bound` is a tighter one from
cvxpy: the continuous relaxation of the same problem (ceilings dropped, parameters real), which
keeps the ``c + 1`` rows, the block's shared height and the memory limit, as a geometric program.

Wire length: the sum, over the connectivity lines between two *kernels*, of the L1 distance between
the centres of their rectangles.  ``input`` and ``output`` nodes are not placed on the fabric (the
contest gives them no shape), so lines touching them are left out.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from csconform.documents import read_text
from csconform.errors import (
    InfeasibleError,
    InstanceFormatError,
    InvalidInputError,
    PlacementError,
    TimeLimitError,
)
from csconform.output_guard import write_text
from csconform.perf.legalize import Shelf, ShelfTable

#: Largest integer accepted for any parameter of an instance (guards against absurd inputs).
MAX_PARAMETER = 1_000_000
# the twenty public contest instances, shipped with the package (their SOURCE.md says where from)
BUNDLED_INSTANCES = Path(__file__).resolve().parent / "instances" / "ispd2020"

_KERNEL_KEYS = {
    "conv": ("W", "H", "R", "S", "C", "K", "T", "U"),
    "dblock": ("f", "h", "w"),
    "cblock": ("f", "h", "w"),
}
_NODE = re.compile(r"^(?P<type>[A-Za-z_]\w*)\s*\[\s*(?P<index>\d+)\s*\]\s*(?P<rest>.*)$")
_EDGE = re.compile(
    r"^(?P<src_type>\w+)\s*\[\s*(?P<src>\d+)\s*\]\s*:\s*\w+\s*->\s*"
    r"(?P<dst_type>\w+)\s*\[\s*(?P<dst>\d+)\s*\]\s*:\s*\w+\s*,\s*shape\s*:\s*(?P<shape>(\[\s*\d+\s*\])+)\s*$"
)
# One token of a node's fields: a quoted name, a bracketed list, "=", or a run of other characters.
# The alternatives start with different characters and none can shrink once matched, so scanning a
# line is linear in its length (the former "(\w+)\s*=\s*..." pattern, retried at every position of a
# long word without "=", was quadratic: minutes for a 100 kB word).
_TOKEN = re.compile(r"'[^']*'|\[[^\]]*\]|=|[^\s='\[]+|\S")
MAX_INSTANCE_BYTES = 8 * 2**20
"""Largest .kgraph file read: about a hundred thousand kernels' lines."""
MAX_KERNELS = 20_000
"""Most kernels an instance may define (the public instances have up to 155)."""
MAX_FABRIC_SIDE = 4096
"""Longest fabric side accepted, in cores: the WSE-3's longer side is 1,172."""
MAX_CONVOLUTION_WORK = 2**50
"""Largest H W C K R S of one convolution (ResNet-50's largest is about 2**30): every count the cost
model forms then stays exact in 64-bit integers and floats."""


# --- the instance --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Convolution:
    """One convolution of the kernel library: image H x W, filter R x S, C -> K features, stride T, U."""

    H: int
    W: int
    R: int
    S: int
    C: int
    K: int
    T: int = 1
    U: int = 1

    @property
    def area_time(self) -> float:
        """Area x time any implementation needs: 3 H W C K R S / (T U) (the README's bound)."""
        return 3 * self.H * self.W * self.C * self.K * self.R * self.S / (self.T * self.U)


@dataclass(frozen=True)
class Kernel:
    """A node that is placed: its file index, name, type, arguments and convolutions."""

    index: int
    name: str
    type: str
    args: dict[str, int]
    convolutions: tuple[Convolution, ...]


@dataclass(frozen=True)
class Instance:
    source: str
    width: int
    height: int
    memlimit: int
    weights: dict[str, float]
    kernels: tuple[Kernel, ...]
    terminals: dict[int, str]  # input/output node index -> type
    edges: tuple[tuple[int, int], ...]  # (source node index, destination node index), as in the file

    @property
    def name(self) -> str:
        return Path(self.source).stem


def block_convolutions(kind: str, f: int, h: int, w: int) -> tuple[Convolution, ...]:
    """The README's expansion of a dblock (three convolutions) or cblock (four)."""
    if kind == "dblock":
        return (
            Convolution(h, w, 1, 1, f, f // 4),
            Convolution(h, w, 3, 3, f // 4, f // 4),
            Convolution(h, w, 1, 1, f // 4, f),
        )
    return (
        Convolution(h, w, 1, 1, f // 2, f // 4),
        Convolution(h, w, 3, 3, f // 4, f // 4, 2, 2),
        Convolution(h // 2, w // 2, 1, 1, f // 4, f),
        Convolution(h, w, 1, 1, f // 2, f, 2, 2),
    )


class _Reader:
    """Line-by-line reader that names file and line in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, line_number: int, message: str) -> InstanceFormatError:
        return InstanceFormatError(f"{self.source}:{line_number}: {message}")

    def integer(self, line_number: int, key: str, text: str) -> int:
        if not re.fullmatch(r"\d+", text):
            raise self.fail(line_number, f"{key}={text!r} is not a positive integer")
        value = int(text)
        if not 1 <= value <= MAX_PARAMETER:
            raise self.fail(line_number, f"{key}={value} is outside 1..{MAX_PARAMETER}")
        return value


def _strip_comments(text: str, reader: _Reader) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """Split the text into (line number, text) of code lines and of comment lines."""
    code: list[tuple[int, str]] = []
    comments: list[tuple[int, str]] = []
    in_comment_since = 0
    for number, line in enumerate(text.splitlines(), start=1):
        rest = line
        kept = ""
        while rest:
            if in_comment_since:
                end = rest.find("*)")
                if end < 0:
                    comments.append((number, rest))
                    rest = ""
                else:
                    comments.append((number, rest[:end]))
                    rest = rest[end + 2 :]
                    in_comment_since = 0
            else:
                start = rest.find("(*")
                if start < 0:
                    kept += rest
                    rest = ""
                else:
                    kept += rest[:start]
                    rest = rest[start + 2 :]
                    in_comment_since = number
        if "*)" in kept:
            raise reader.fail(number, "'*)' without an opening '(*'")
        if kept.strip():
            code.append((number, kept.strip()))
    if in_comment_since:
        raise reader.fail(in_comment_since, "comment opened with '(*' is never closed")
    return code, comments


def _header(comments: list[tuple[int, str]], reader: _Reader) -> tuple[dict[str, int], dict[str, float]]:
    values: dict[str, tuple[int, str]] = {}
    for number, text in comments:
        for piece in text.split():
            if "=" in piece:
                key, _, value = piece.partition("=")
                values[key] = (number, value)
    sizes: dict[str, int] = {}
    for key in ("width", "height", "memlimit"):
        if key not in values:
            raise reader.fail(1, f"the header comment does not give {key}=")
        sizes[key] = reader.integer(values[key][0], key, values[key][1])
    for key in ("width", "height"):
        if sizes[key] > MAX_FABRIC_SIDE:
            raise reader.fail(
                values[key][0], f"{key}={sizes[key]}: a fabric side of at most {MAX_FABRIC_SIDE} cores is accepted"
            )
    weights: dict[str, float] = {}
    for key, default in (("wdeltat", 1.0), ("wlength", 1.0), ("wadapter", 0.0)):
        if key not in values:
            weights[key] = default
            continue
        number, text = values[key]
        try:
            weights[key] = float(text)
        except ValueError:
            raise reader.fail(number, f"{key}={text!r} is not a number") from None
        if not math.isfinite(weights[key]) or weights[key] < 0:
            raise reader.fail(number, f"{key}={text!r} must be finite and >= 0")
    return sizes, weights


def _assignments(number: int, text: str, reader: _Reader) -> tuple[dict[str, str], list[str]]:
    """``key=value`` fields of a node line (the last of a repeated key wins), and the repeated keys;
    anything else is refused, naming it."""
    tokens = _TOKEN.findall(text)
    assignments: dict[str, str] = {}
    repeated: list[str] = []
    position = 0
    while position < len(tokens):
        key = tokens[position]
        if not (key.isidentifier() and position + 2 < len(tokens) and tokens[position + 1] == "="):
            raise reader.fail(number, f"cannot read {' '.join(tokens[position:])[:60]!r}: expected key=value")
        value = tokens[position + 2]
        if value == "=":
            raise reader.fail(number, f"{key}= has no value")
        if key in assignments:
            repeated.append(key)
        assignments[key] = value
        position += 3
    return assignments, repeated


def _node(number: int, match: re.Match[str], reader: _Reader) -> tuple[int, str, dict[str, str], list[str]]:
    return int(match["index"]), match["type"], *_assignments(number, match["rest"], reader)


def _kernel(number: int, index: int, kind: str, assignments: dict[str, str], reader: _Reader) -> Kernel:
    name = assignments.pop("name", None)
    if name is None or not re.fullmatch(r"'[^']+'", name):
        raise reader.fail(number, f"{kind}[{index}] needs a quoted name='...'")
    expected = _KERNEL_KEYS[kind]
    if set(assignments) != set(expected):
        raise reader.fail(number, f"{kind}[{index}] needs exactly {', '.join(expected)}, got {', '.join(assignments)}")
    args = {key: reader.integer(number, key, assignments[key]) for key in expected}
    if kind == "conv":
        order = ("H", "W", "R", "S", "C", "K", "T", "U")
        convolutions: tuple[Convolution, ...] = (Convolution(*(args[key] for key in order)),)
    else:
        if args["f"] % 4:
            raise reader.fail(number, f"{kind}[{index}]: f={args['f']} must be a multiple of 4")
        if kind == "cblock" and (args["h"] % 2 or args["w"] % 2):
            raise reader.fail(number, f"cblock[{index}]: h and w must be even (the block halves the image)")
        convolutions = block_convolutions(kind, args["f"], args["h"], args["w"])
    for conv in convolutions:
        if conv.H * conv.W * conv.C * conv.K * conv.R * conv.S > MAX_CONVOLUTION_WORK:
            raise reader.fail(number, f"{kind}[{index}]: H W C K R S exceeds 2**50: larger than a convolution may be")
    return Kernel(index=index, name=name.strip("'"), type=kind, args=args, convolutions=convolutions)


def parse_kgraph_text(text: str, source: str = "<string>") -> Instance:
    """Parse the text of a ``.kgraph`` instance; InstanceFormatError names the file and line."""
    reader = _Reader(source)
    code, comments = _strip_comments(text, reader)
    sizes, weights = _header(comments, reader)
    kernels: dict[int, Kernel] = {}
    terminals: dict[int, str] = {}
    node_type: dict[int, str] = {}
    raw_edges: list[tuple[int, str, int, str, int]] = []
    for number, line in code:
        edge = _EDGE.match(line)
        if edge:
            raw_edges.append((number, edge["src_type"], int(edge["src"]), edge["dst_type"], int(edge["dst"])))
            continue
        node = _NODE.match(line)
        if not node or "->" in line:
            raise reader.fail(number, f"neither a node definition nor a connection: {line[:60]!r}")
        index, kind, assignments, repeated = _node(number, node, reader)
        if index in node_type:
            raise reader.fail(number, f"node index {index} is defined twice")
        if kind in ("input", "output"):
            if set(assignments) - {"n", "name"}:
                raise reader.fail(number, f"{kind}[{index}] has unexpected fields")
            terminals[index] = kind
        elif kind in _KERNEL_KEYS:
            if repeated:  # (the contest's own input nodes repeat name=, harmlessly)
                raise reader.fail(number, f"{kind}[{index}] gives {', '.join(sorted(set(repeated)))}= twice")
            if len(kernels) == MAX_KERNELS:
                raise reader.fail(number, f"more than {MAX_KERNELS} kernels: larger than an instance may be")
            kernels[index] = _kernel(number, index, kind, assignments, reader)
        else:
            raise reader.fail(number, f"unknown node type {kind!r} (known: input, output, conv, dblock, cblock)")
        node_type[index] = kind
    last_line = max(len(text.splitlines()), 1)
    if not kernels:
        raise reader.fail(last_line, "the instance defines no kernels")
    names = [k.name for k in kernels.values()]
    if len(set(names)) != len(names):
        raise reader.fail(last_line, "kernel names must be unique")
    edges: list[tuple[int, int]] = []
    for number, src_type, src, dst_type, dst in raw_edges:
        for kind, index in ((src_type, src), (dst_type, dst)):
            if node_type.get(index) != kind:
                raise reader.fail(number, f"{kind}[{index}] is not a defined node")
        if src == dst:
            raise reader.fail(number, f"node {src} is connected to itself")
        edges.append((src, dst))
    ordered = tuple(kernels[i] for i in sorted(kernels))
    return Instance(
        source, sizes["width"], sizes["height"], sizes["memlimit"], weights, ordered, terminals, tuple(edges)
    )


def parse_kgraph(path: str | Path) -> Instance:
    """Read and parse a ``.kgraph`` file."""
    text = read_text(path, MAX_INSTANCE_BYTES, "kernel-graph instance (.kgraph)")
    return parse_kgraph_text(text, source=str(path))


# --- the cost model --------------------------------------------------------------------------------


def _ceil_div(numerator: np.ndarray | int, denominator: np.ndarray | int) -> np.ndarray:
    return -(-np.asarray(numerator) // np.asarray(denominator))


def convolution_cost(conv: Convolution, h: int, w: int, c: int, k: int) -> dict[str, float]:
    """The README's formulas for one convolution at execution parameters (h, w, c, k), unrotated."""
    time_cycles = (
        int(_ceil_div(conv.H, h) * _ceil_div(conv.W, w) * _ceil_div(conv.C, c) * _ceil_div(conv.K, k))
        * conv.R
        * conv.S
        / (conv.T * conv.U)
    )
    memory_words = int(
        _ceil_div(conv.C, c) * _ceil_div(conv.K, k) * conv.R * conv.S
        + _ceil_div(conv.W + conv.S - 1, w) * _ceil_div(conv.H + conv.R - 1, h) * _ceil_div(conv.K, k)
    )
    return {"height": h * w * (c + 1), "width": 3 * k, "time": time_cycles, "memory": memory_words}


def kernel_cost(kernel: Kernel, h: int, w: int, c: Sequence[int], k: Sequence[int]) -> dict[str, float]:
    """A kernel's (unrotated) height, width, time and memory: max height, summed width, max time/memory."""
    parts = [convolution_cost(conv, h, w, ci, ki) for conv, ci, ki in zip(kernel.convolutions, c, k, strict=True)]
    return {
        "height": max(p["height"] for p in parts),
        "width": sum(p["width"] for p in parts),
        "time": max(p["time"] for p in parts),
        "memory": max(p["memory"] for p in parts),
    }


def _useful_values(totals: Sequence[int], cap: int) -> np.ndarray:
    """Values v <= cap at which some ceil(total / v) changes: the values ceil(total / q) takes.

    v is one of them exactly when q = ceil(total / v) gives it back (ceil(total / q) == v), so only
    the candidates up to ``cap`` (the fabric's side) are tried, whatever the size of ``total``.
    """
    values: set[int] = set()
    for total in totals:
        candidates = np.arange(1, min(cap, total) + 1, dtype=np.int64)
        attained = _ceil_div(total, _ceil_div(total, candidates)) == candidates
        values.update(int(v) for v in candidates[attained])
    return np.array(sorted(values), dtype=np.int64)


@dataclass
class ShapeGrid:
    """Candidate (h, w, c_max) of one kernel, with everything that does not depend on k."""

    h: np.ndarray  # (G,)
    w: np.ndarray  # (G,)
    c: np.ndarray  # (G, n_conv): c_i = min(c_max, C_i)
    height: np.ndarray  # (G,): h * w * (c_max + 1)
    steps_per_k_step: np.ndarray  # (G, n_conv): time / ceil(K/k)
    k_steps_for_memory: np.ndarray  # (G, n_conv): largest ceil(K/k) the memory limit allows
    K: np.ndarray  # (n_conv,)

    def shapes_for(self, target_time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Narrowest k per convolution meeting ``target_time``: (valid mask, k (G, n_conv), width (G,))."""
        by_time = np.floor(target_time / self.steps_per_k_step * (1 + 1e-12))
        k_steps = np.minimum(np.minimum(by_time, self.k_steps_for_memory), self.K)
        valid = (k_steps >= 1).all(axis=1)
        k = _ceil_div(self.K, np.maximum(k_steps, 1).astype(np.int64))
        return valid, k, 3 * k.sum(axis=1)


def shape_grid(kernel: Kernel, memlimit: int, longest_side: int) -> ShapeGrid:
    """Enumerate the (h, w, c_max) worth trying for a kernel whose sides may not exceed ``longest_side``."""
    convs = kernel.convolutions
    cap_hw = max(longest_side // 2, 1)
    hs = _useful_values([cv.H for cv in convs], cap_hw)
    ws = _useful_values([cv.W for cv in convs], cap_hw)
    cs = _useful_values([cv.C for cv in convs], longest_side)
    hh, ww = np.meshgrid(hs, ws, indexing="ij")
    hh, ww = hh.ravel(), ww.ravel()
    keep = hh * ww * 2 <= longest_side
    hh, ww = hh[keep], ww[keep]
    # every (h, w) with every c_max whose height fits
    hh3 = np.repeat(hh, len(cs))
    ww3 = np.repeat(ww, len(cs))
    cc3 = np.tile(cs, len(hh))
    keep = hh3 * ww3 * (cc3 + 1) <= longest_side
    hh3, ww3, cc3 = hh3[keep], ww3[keep], cc3[keep]
    if not len(hh3):  # no shape fits a side this short: an empty grid (the solver names the kernel)
        empty = np.zeros((0, len(convs)))
        none = np.zeros(0, dtype=np.int64)
        return ShapeGrid(none, none, empty.astype(np.int64), none, empty, empty, np.array([cv.K for cv in convs]))
    big = {key: np.array([getattr(cv, key) for cv in convs]) for key in ("H", "W", "R", "S", "C", "K", "T", "U")}
    c = np.minimum(cc3[:, None], big["C"][None, :])
    c_steps = _ceil_div(big["C"][None, :], c)
    image_steps = _ceil_div(big["H"][None, :], hh3[:, None]) * _ceil_div(big["W"][None, :], ww3[:, None])
    steps = image_steps * c_steps * big["R"] * big["S"] / (big["T"] * big["U"])
    halo = _ceil_div(big["W"][None, :] + big["S"] - 1, ww3[:, None]) * _ceil_div(
        big["H"][None, :] + big["R"] - 1, hh3[:, None]
    )
    per_k_step_words = c_steps * big["R"] * big["S"] + halo
    height = hh3 * ww3 * (cc3 + 1)
    steps = steps.astype(float)
    k_steps_for_memory = (memlimit // per_k_step_words).astype(float)
    # rows with the same steps and memory allowance take the same k and time at every target: only
    # the lowest (the first stored among equals) can ever be chosen, so the others are dropped
    profile = np.hstack([steps, k_steps_for_memory])
    grouped = np.lexsort((np.arange(len(height)), height, *profile.T))  # by profile, then lowest first
    new_profile = np.r_[True, (np.diff(profile[grouped], axis=0) != 0).any(axis=1)]
    kept = np.sort(grouped[new_profile])
    return ShapeGrid(
        h=hh3[kept],
        w=ww3[kept],
        c=c[kept],
        height=height[kept],
        steps_per_k_step=steps[kept],
        k_steps_for_memory=k_steps_for_memory[kept],
        K=big["K"],
    )


@dataclass
class ShapeCatalogue:
    """The shape grids of every kernel stacked into one table, so one numpy pass serves all kernels.

    Rows are grouped by kernel, in kernel order, each in its grid's order; there is one column per
    convolution, and kernels with fewer convolutions are padded with columns that cost nothing.
    """

    grids: list[ShapeGrid]
    kernel: np.ndarray  # (R,): position of the row's kernel in instance.kernels
    grid_row: np.ndarray  # (R,): the row in that kernel's grid
    height: np.ndarray  # (R,)
    steps_per_k_step: np.ndarray  # (R, m); 1 in padding
    k_steps_for_memory: np.ndarray  # (R, m); 1 in padding
    K: np.ndarray  # (R, m); 1 in padding
    is_convolution: np.ndarray  # (R, m): False in padding

    @classmethod
    def of(cls, grids: list[ShapeGrid]) -> ShapeCatalogue:
        columns = max(len(grid.K) for grid in grids)
        padded: dict[int, tuple[np.ndarray, ...]] = {}  # kernels of one signature share their grid object

        def pad(values: np.ndarray, padding: float) -> np.ndarray:
            return np.pad(values, ((0, 0), (0, columns - values.shape[1])), constant_values=padding)

        for grid in grids:
            if id(grid) not in padded:
                padded[id(grid)] = (
                    pad(grid.steps_per_k_step, 1.0),
                    pad(grid.k_steps_for_memory, 1.0),
                    pad(np.broadcast_to(grid.K, (len(grid.h), len(grid.K))), 1),
                    pad(np.ones((len(grid.h), len(grid.K)), bool), False),
                )

        def stacked(part: int) -> np.ndarray:
            return np.concatenate([padded[id(grid)][part] for grid in grids])

        sizes = [len(grid.h) for grid in grids]
        return cls(
            grids=grids,
            kernel=np.repeat(np.arange(len(grids)), sizes),
            grid_row=np.concatenate([np.arange(size) for size in sizes]),
            height=np.concatenate([grid.height for grid in grids]),
            steps_per_k_step=stacked(0),
            k_steps_for_memory=stacked(1),
            K=stacked(2),
            is_convolution=stacked(3),
        )

    def shapes_for(self, target_time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`ShapeGrid.shapes_for` of every row: (valid (R,), k (R, m), width (R,))."""
        by_time = np.floor(target_time / self.steps_per_k_step * (1 + 1e-12))
        k_steps = np.minimum(np.minimum(by_time, self.k_steps_for_memory), self.K)
        k_steps = np.where(self.is_convolution, k_steps, 1.0)
        valid = np.asarray((k_steps >= 1).all(axis=1))
        k = _ceil_div(self.K, np.maximum(k_steps, 1).astype(np.int64))
        return valid, k, 3 * np.where(self.is_convolution, k, 0).sum(axis=1)


# --- the time limit -----------------------------------------------------------------------------


class _Clock:
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


GP_BOUND_S_PER_KERNEL = 3e-3
"""Time cvxpy takes to build and solve the relaxation, per kernel (measured: 1.7 s for 1,000
kernels, 12.5 s for 5,000, on two cores); it is computed only when the time left covers this."""


# --- bounds ---------------------------------------------------------------------------------------


def area_lower_bound(instance: Instance) -> float:
    """README: every convolution needs area >= 3 H W C K R S / (T U t); the areas share the fabric."""
    total = sum(conv.area_time for kernel in instance.kernels for conv in kernel.convolutions)
    return total / (instance.width * instance.height)


def gp_lower_bound(instance: Instance, time_limit_s: float = 30.0) -> float:
    """Continuous relaxation, a geometric program, solved by cvxpy in its convex (logarithmic) form.

    Ceilings are dropped (ceil(x) >= x) and parameters are real; kept are the c + 1 rows, the shared
    height of a block, the memory limit, the sides within the fabric, and the total area.  Any legal
    solution, with each parameter clamped to where it stops mattering (h <= H, c <= C, ...), is
    feasible here, so the optimum bounds every legal slowest time from below.

    In the logarithms of its variables a geometric program is convex: monomial constraints become
    linear and posynomial ones log-sum-exp.  Written that way with one vector per parameter (a
    kernel's ``h, w, c_max``, a convolution's ``c, k``), cvxpy compiles a few large constraints,
    far faster than its ``gp=True`` path, which compiles one sum per convolution.
    """
    import cvxpy as cp  # only here: importing it costs a second, which a short time limit cannot spare

    longest = max(instance.width, instance.height)
    kernels = instance.kernels
    convs = [conv for kernel in kernels for conv in kernel.convolutions]
    owner = np.repeat(np.arange(len(kernels)), [len(kernel.convolutions) for kernel in kernels])
    member = (owner[None, :] == np.arange(len(kernels))[:, None]).astype(float)  # kernel x convolution

    def log_of_convolutions(key: str) -> np.ndarray:
        return np.log([float(getattr(conv, key)) for conv in convs])

    def log_kernel_max(key: str) -> np.ndarray:
        return np.log([float(max(getattr(conv, key) for conv in kernel.convolutions)) for kernel in kernels])

    H, W, R, S, C, K, T, U = (log_of_convolutions(key) for key in ("H", "W", "R", "S", "C", "K", "T", "U"))
    halo = np.log([float((conv.W + conv.S - 1) * (conv.H + conv.R - 1)) for conv in convs])  # input tile
    # the logarithms of the relaxation's positive variables
    log_slowest = cp.Variable()
    log_area, log_width = cp.Variable(len(kernels)), cp.Variable(len(kernels))
    log_h, log_w, log_c_max = cp.Variable(len(kernels)), cp.Variable(len(kernels)), cp.Variable(len(kernels))
    log_c, log_k = cp.Variable(len(convs)), cp.Variable(len(convs))
    log_image = log_h[owner] + log_w[owner]  # log(h w) of each convolution's kernel
    log_height = log_h + log_w + cp.logistic(log_c_max)  # log(h w (c_max + 1))
    constraints = [
        cp.log_sum_exp(log_area) <= np.log(instance.width * instance.height),
        log_h >= 0,
        log_w >= 0,
        log_c >= 0,
        log_k >= 0,
        log_h <= log_kernel_max("H"),
        log_w <= log_kernel_max("W"),
        log_c_max <= log_kernel_max("C"),
        log_c <= C,
        log_k <= K,
        log_c <= log_c_max[owner],
        member @ cp.exp(np.log(3) + log_k - log_width[owner]) <= 1,  # width >= 3 * (sum of k)
        log_height <= np.log(longest),
        log_width <= np.log(longest),
        H + W + C + K + R + S - T - U - log_image - log_c - log_k <= log_slowest,  # steps / (h w c k)
        cp.log_sum_exp(  # memory: C K R S / (c k) + (W + S - 1) (H + R - 1) K / (w h k)
            cp.vstack([C + K + R + S - log_c - log_k, halo + K - log_image - log_k]), axis=0
        )
        <= np.log(instance.memlimit),
        log_height + log_width <= log_area,
    ]
    problem = cp.Problem(cp.Minimize(log_slowest), constraints)
    try:
        problem.solve(solver=cp.CLARABEL, time_limit=time_limit_s)
    except cp.error.SolverError as error:
        raise PlacementError(f"{instance.source}: the relaxation's solver failed: {error}") from error
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or log_slowest.value is None:
        raise PlacementError(f"{instance.source}: the continuous relaxation ended {problem.status}")
    return float(np.exp(log_slowest.value)) * (1 - 1e-6)  # interior-point slack: never overstate a bound


# --- the solver -----------------------------------------------------------------------------------


def pipeline_order(instance: Instance) -> list[int]:
    """Kernel positions (into ``instance.kernels``) in a depth-first topological order of the graph.

    Depth-first keeps each chain of the network together, so the shelves keep neighbours close.
    Kernels in a cycle or unreachable keep their file order at the end.
    """
    position = {kernel.index: i for i, kernel in enumerate(instance.kernels)}
    successors: dict[int, list[int]] = {i: [] for i in position}
    indegree = dict.fromkeys(position, 0)
    for src, dst in instance.edges:
        if src in position and dst in position:
            successors[src].append(dst)
            indegree[dst] += 1
    starts = [i for i in position if indegree[i] == 0]
    stack = sorted(starts, reverse=True)
    order: list[int] = []
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt in sorted(successors[node], reverse=True):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                stack.append(nxt)
    seen = set(order)
    order += [i for i in position if i not in seen]
    return [position[i] for i in order]


@dataclass
class _Shapes:
    """Every legal shape of every kernel at one target time, both rotations, as flat arrays.

    ``narrowest[i, H]`` is the least width of kernel ``i`` under the height cap ``H`` (inf if none),
    what the shelf packing needs; :meth:`choice` names the shape a layout takes under each cap.
    """

    kernel: np.ndarray  # (S,): kernel position
    row: np.ndarray  # (S,): catalogue row
    rotated: np.ndarray  # (S,)
    placed_height: np.ndarray  # (S,)
    placed_width: np.ndarray  # (S,)
    k: np.ndarray  # (R, m): k of every catalogue row at this target
    narrowest: np.ndarray  # (n, fabric_h + 1)
    shelves: ShelfTable  # the narrowest widths, prepared for packing kernels in any order
    _choice: np.ndarray | None = None

    def choice(self) -> np.ndarray:
        """(n, fabric_h + 1): the shape a kernel takes under each height cap (-1 if none).

        The narrowest shape, then the smallest area, then the first stored (unrotated before
        rotated, grid rows ascending), so layouts are reproducible.  Among the narrowest, the smallest
        area is the lowest: the shape at the cap where the narrowest width was first reached.
        """
        if self._choice is None:
            count, caps = self.narrowest.shape
            cell = self.kernel * caps + self.placed_height
            narrowest_there = self.placed_width == self.narrowest.ravel()[cell]
            first_stored = np.full(count * caps, len(cell))
            np.minimum.at(first_stored, cell[narrowest_there], np.flatnonzero(narrowest_there))
            # the cap at which each cap's narrowest width was first reached
            narrower = self.narrowest < np.hstack([np.full((count, 1), np.inf), self.narrowest[:, :-1]])
            reached_at = np.maximum.accumulate(np.where(narrower, np.arange(caps), 0), axis=1)
            chosen = first_stored.reshape(count, caps)[np.arange(count)[:, None], reached_at]
            self._choice = np.where(np.isfinite(self.narrowest), chosen, -1)
        return self._choice


def _shapes_at(catalogue: ShapeCatalogue, target: float, fabric_w: int, fabric_h: int) -> _Shapes:
    valid, k, width = catalogue.shapes_for(target)
    rows = np.flatnonzero(valid)
    height = catalogue.height[rows]
    width = width[rows]
    placed_height = np.concatenate([height, width])
    placed_width = np.concatenate([width, height])
    fits = (placed_height <= fabric_h) & (placed_width <= fabric_w)
    row = np.concatenate([rows, rows])[fits]
    kernel = catalogue.kernel[row]
    placed_height, placed_width = placed_height[fits], placed_width[fits]
    count = len(catalogue.grids)
    narrowest = np.full(count * (fabric_h + 1), np.inf)
    np.minimum.at(narrowest, kernel * (fabric_h + 1) + placed_height, placed_width.astype(float))
    narrowest = np.minimum.accumulate(narrowest.reshape(count, fabric_h + 1), axis=1)
    return _Shapes(
        kernel=kernel,
        row=row,
        rotated=np.concatenate([np.zeros(len(rows), bool), np.ones(len(rows), bool)])[fits],
        placed_height=placed_height,
        placed_width=placed_width,
        k=k,
        narrowest=narrowest,
        shelves=ShelfTable(narrowest, fabric_w),
    )


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


@dataclass
class _Layout:
    """A shelf layout: per kernel (instance order) the chosen shape and its rectangle."""

    order: list[int]
    shape: np.ndarray  # index into _Shapes
    x: np.ndarray
    y: np.ndarray
    width: np.ndarray
    height: np.ndarray


def _layout(shapes: _Shapes, order: list[int], shelves: list[Shelf], fabric_w: int) -> _Layout:
    """Each kernel takes its chosen shape under its shelf's height; even shelves fill left to right,
    odd ones right to left, so the pipeline snakes through the fabric."""
    shelf_heights = np.array([shelf.height for shelf in shelves])
    lengths = np.array([shelf.stop - shelf.start for shelf in shelves])
    shelf_of_slot = np.repeat(np.arange(len(shelves)), lengths)
    kernels = np.asarray(order)
    chosen = shapes.choice()[kernels, shelf_heights[shelf_of_slot]]
    width, height = shapes.placed_width[chosen], shapes.placed_height[chosen]
    right_edge = np.cumsum(width)
    left_of_shelf = np.repeat(right_edge[lengths.cumsum() - lengths] - width[lengths.cumsum() - lengths], lengths)
    x_from_left = right_edge - width - left_of_shelf
    x = np.where(shelf_of_slot % 2 == 0, x_from_left, fabric_w - x_from_left - width)
    y = np.repeat(np.cumsum(shelf_heights) - shelf_heights, lengths)
    by_kernel = np.empty(len(order), dtype=np.int64)
    by_kernel[kernels] = np.arange(len(order))
    return _Layout(
        order=list(order),
        shape=chosen[by_kernel],
        x=x[by_kernel],
        y=y[by_kernel],
        width=width[by_kernel],
        height=height[by_kernel],
    )


def _kernel_edges(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """Kernel positions at both ends of every line between two kernels (input/output lines left out)."""
    position = {kernel.index: i for i, kernel in enumerate(instance.kernels)}
    pairs = [(position[src], position[dst]) for src, dst in instance.edges if src in position and dst in position]
    ends = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return ends[:, 0], ends[:, 1]


def _layout_wirelength(layout: _Layout, edges: tuple[np.ndarray, np.ndarray]) -> float:
    """:func:`wirelength` of a layout, from its rectangles."""
    centre_x = layout.x + layout.width / 2
    centre_y = layout.y + layout.height / 2
    a, b = edges
    return float((np.abs(centre_x[a] - centre_x[b]) + np.abs(centre_y[a] - centre_y[b])).sum())


def _placed_kernels(instance: Instance, catalogue: ShapeCatalogue, shapes: _Shapes, layout: _Layout) -> list[dict]:
    """The solution's kernels: execution parameters, rectangle, time and memory from the cost model."""
    placed = []
    for position, kernel in enumerate(instance.kernels):
        shape = int(layout.shape[position])
        row = int(shapes.row[shape])
        grid = catalogue.grids[position]
        grid_row = int(catalogue.grid_row[row])
        h, w = int(grid.h[grid_row]), int(grid.w[grid_row])
        c = [int(v) for v in grid.c[grid_row]]
        k = [int(v) for v in shapes.k[row, : len(kernel.convolutions)]]
        cost = kernel_cost(kernel, h, w, c, k)
        rotated = bool(shapes.rotated[shape])
        size = (int(cost["height"]), int(cost["width"])) if rotated else (int(cost["width"]), int(cost["height"]))
        assert size == (int(layout.width[position]), int(layout.height[position]))  # the cost model agrees
        placed.append(
            {
                "name": kernel.name,
                "type": kernel.type,
                "exec": {"h": h, "w": w, "c": c, "k": k},
                "x": int(layout.x[position]),
                "y": int(layout.y[position]),
                "rotation": 90 if rotated else 0,
                "width": size[0],
                "height": size[1],
                "time": cost["time"],
                "memory": int(cost["memory"]),
            }
        )
    return placed


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


def _min_areas(catalogue: ShapeCatalogue, target: float, fabric_w: int, fabric_h: int) -> np.ndarray:
    """Least area of a legal shape (either rotation fits) of every kernel at ``target`` (inf if none)."""
    valid, _, width = catalogue.shapes_for(target)
    height = catalogue.height
    fits = ((height <= fabric_h) & (width <= fabric_w)) | ((width <= fabric_h) & (height <= fabric_w))
    areas = np.full(len(catalogue.grids), np.inf)
    usable = valid & fits
    np.minimum.at(areas, catalogue.kernel[usable], (height[usable] * width[usable]).astype(float))
    return areas


def shape_lower_bound(
    instance: Instance, catalogue: ShapeCatalogue | None = None, clock: _Clock | None = None
) -> float:
    """Smallest t at which every kernel has a legal shape and their least areas fit the fabric area.

    The shape grid holds, up to dominance, every legal execution parameter set, so this bounds
    every legal solution; it is never below the README's bound and shows how much of the gap to
    that bound is forced by the ceilings, the ``c + 1`` rows and the memory limit. When ``clock``
    runs out the bisection stops: its lower end is still a bound, only a weaker one.
    """
    if catalogue is None:
        longest = max(instance.width, instance.height)
        catalogue = ShapeCatalogue.of([shape_grid(kernel, instance.memlimit, longest) for kernel in instance.kernels])
    capacity = instance.width * instance.height

    def fits(target: float) -> bool:
        return float(_min_areas(catalogue, target, instance.width, instance.height).sum()) <= capacity

    low = area_lower_bound(instance)
    high = max(low, 1.0)
    while not fits(high):
        low, high = high, high * 2
        if high > 1e18:
            raise InfeasibleError(f"{instance.source}: the kernels do not fit the fabric at any time")
        if clock is not None:
            clock.require("bounding the slowest kernel's time")
    for _ in range(200):  # bisection, capped
        if high - low <= 1e-6 * high or (clock is not None and clock.expired(clock.bound_share)):
            break
        middle = (low + high) / 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return low


def _smallest_target(
    catalogue: ShapeCatalogue,
    orders: list[list[int]],
    low: float,
    high: float,
    instance: Instance,
    clock: _Clock,
    first: tuple[_Shapes, list[Shelf]],
) -> tuple[_Shapes, list[tuple[list[int], list[Shelf]]]]:
    """Bisect the target time down to the least at which some order's shelves fit the fabric.

    The shapes at a target do not depend on the order, so each step builds them once and tries
    every order (while the search's share of the time limit lasts). ``first`` is the shapes at
    ``high`` and the shelves of ``orders[0]`` there. Returns the shapes at the final target and
    every order that packs there (with its shelves).
    """

    def packings(shapes: _Shapes, known: list[Shelf] | None = None) -> list[tuple[list[int], list[Shelf]]]:
        """Every order whose shelves fit at these shapes (``known``: those of ``orders[0]``)."""
        packed: list[tuple[list[int], list[Shelf]]] = []
        for index, order in enumerate(orders):
            if packed and not clock.allows("pack", clock.search_share):
                break
            if index == 0 and known is not None:
                shelves: list[Shelf] | None = known
            else:
                with clock.step("pack"):
                    shelves = shapes.shelves.pack(order, instance.height)
            if shelves is not None:
                packed.append((order, shelves))
        return packed

    shapes, shelves = first
    best = (shapes, packings(shapes, shelves))
    while high - low > 1e-4 * high and clock.allows("bisect", clock.search_share):
        middle = (low + high) / 2
        with clock.step("bisect"):
            shapes = _shapes_at(catalogue, middle, instance.width, instance.height)
            attempt = packings(shapes)
        if attempt:
            high, best = middle, (shapes, attempt)
        else:
            low = middle
    return best


def _orders(instance: Instance, catalogue: ShapeCatalogue, target: float, count: int) -> list[list[int]]:
    """Kernel orders to try: the pipeline first (short wires), then by decreasing area and height."""
    pipeline = pipeline_order(instance)
    smallest = _min_areas(catalogue, target, instance.width, instance.height)
    by_area = [int(i) for i in np.argsort(-smallest, kind="stable")]
    tallest = [float(g.height.max()) for g in catalogue.grids]
    by_height = [int(i) for i in np.argsort(-np.asarray(tallest), kind="stable")]
    rng = np.random.default_rng(2020)
    orders = [pipeline, by_area, by_height]
    orders += [[int(i) for i in rng.permutation(len(catalogue.grids))] for _ in range(max(count - len(orders), 0))]
    return orders[:count]


def _reorder_to_pack(
    shelves: ShelfTable,
    order: list[int],
    instance: Instance,
    rng: np.random.Generator,
    patience: int,
    clock: _Clock,
) -> list[int] | None:
    """Local search over kernel orders for one whose shelves fit the fabric.

    At a fixed target every kernel's narrowest-shape table is fixed, so only the shelf split reruns
    per move.  Moves swap two kernels or move one elsewhere; a move is kept when the total shelf
    height does not grow.  Gives up after ``patience`` moves without a strict improvement, or when
    the search's share of the time limit is spent.
    """
    if not shelves.fits_alone:
        return None  # some kernel has no legal shape at this target
    current = list(order)
    height = shelves.total_height(current)
    stale = 0
    while height > instance.height and stale < patience and clock.allows("move", clock.search_share):
        candidate = list(current)
        first, second = (int(v) for v in rng.integers(len(candidate), size=2))
        if rng.random() < 0.5:
            candidate[first], candidate[second] = candidate[second], candidate[first]
        else:
            candidate.insert(second, candidate.pop(first))
        with clock.step("move"):
            candidate_height = shelves.total_height(candidate, height_limit=height)  # inf: taller
        stale = 0 if candidate_height < height else stale + 1
        if candidate_height <= height:
            current, height = candidate, candidate_height
    return current if height <= instance.height else None


def _polish_wires(
    shapes: _Shapes,
    layout: _Layout,
    instance: Instance,
    rng: np.random.Generator,
    patience: int,
    deadline: float,
) -> _Layout:
    """Shorten the wires at a fixed target: move a kernel next to one it is connected to, and keep
    the move when the shelves still fit and the wire length falls."""
    edges = _kernel_edges(instance)
    neighbours: dict[int, list[int]] = {i: [] for i in range(len(instance.kernels))}
    for a, b in zip(*edges, strict=True):
        neighbours[int(a)].append(int(b))
        neighbours[int(b)].append(int(a))
    wires = _layout_wirelength(layout, edges)
    stale = 0
    while stale < patience and time.perf_counter() < deadline:
        stale += 1
        moved = int(rng.integers(len(layout.order)))
        if not neighbours[moved]:
            continue
        anchor = neighbours[moved][int(rng.integers(len(neighbours[moved])))]
        candidate = [k for k in layout.order if k != moved]
        candidate.insert(candidate.index(anchor) + int(rng.integers(2)), moved)
        if candidate == layout.order:
            continue  # already there
        shelves = shapes.shelves.pack(candidate, instance.height)
        if shelves is None:
            continue
        candidate_layout = _layout(shapes, candidate, shelves, instance.width)
        candidate_wires = _layout_wirelength(candidate_layout, edges)
        if candidate_wires < wires:
            layout, wires, stale = candidate_layout, candidate_wires, 0
    return layout


def _layout_max_time(catalogue: ShapeCatalogue, shapes: _Shapes, layout: _Layout) -> float:
    """The slowest kernel's time in a layout, from the catalogue (what judging candidates needs;
    the solution's own figures come from the cost model, :func:`_placed_kernels`)."""
    rows = shapes.row[layout.shape]
    k_steps = _ceil_div(catalogue.K[rows], shapes.k[rows])
    times = np.where(catalogue.is_convolution[rows], catalogue.steps_per_k_step[rows] * k_steps, 0.0)
    return float(times.max())


def _shape_grids(instance: Instance, clock: _Clock) -> list[ShapeGrid]:
    """Every kernel's shape grid (kernels with the same type and arguments share one)."""
    longest = max(instance.width, instance.height)
    grid_of: dict[tuple, ShapeGrid] = {}
    grids = []
    for kernel in instance.kernels:
        signature = (kernel.type, tuple(sorted(kernel.args.items())))
        if signature not in grid_of:
            clock.require("enumerating the kernels' shapes")
            grid = shape_grid(kernel, instance.memlimit, longest)
            if not len(grid.h):
                raise InfeasibleError(
                    f"{instance.source}: no shape of kernel {kernel.name!r} fits the "
                    f"{instance.width} x {instance.height} fabric"
                )
            if not (grid.k_steps_for_memory >= 1).all(axis=1).any():
                raise InfeasibleError(
                    f"{instance.source}: kernel {kernel.name!r} exceeds memlimit {instance.memlimit} "
                    f"with every shape that fits the {instance.width} x {instance.height} fabric"
                )
            grid_of[signature] = grid
        grids.append(grid_of[signature])
    return grids


def solve(
    instance: Instance,
    time_limit_s: float = 60.0,
    with_gp_bound: bool = True,
    orders: int = 8,
    patience: int = 300,
    started: float | None = None,
) -> IspdSolution:
    """Choose execution parameters and positions minimising the slowest kernel's time.

    Several kernel orders are packed (pipeline order first); the fastest wins, and among equally
    fast ones the shortest wire length.  A local search over orders then tries to pack each next
    faster time level (``patience`` moves without progress end it).  The time limit, counted from
    ``started`` (a ``time.perf_counter()`` value; default: now), is honoured by every phase (see
    :class:`_Clock`): when it runs out the best placement so far is returned, or, if there is none
    yet, a TimeLimitError says so.
    """
    started = time.perf_counter() if started is None else started
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) or not time_limit_s > 0:
        raise InvalidInputError(f"time limit must be a positive number of seconds, got {time_limit_s!r}")
    clock = _Clock(float(time_limit_s), started, instance.source)
    catalogue = ShapeCatalogue.of(_shape_grids(instance, clock))
    clock.require("stacking the kernels' shapes")
    lower = area_lower_bound(instance)
    shape_bound = shape_lower_bound(instance, catalogue, clock)
    edges = _kernel_edges(instance)
    # a target that packs in pipeline order, found by doubling; then the least target some order packs
    candidates = _orders(instance, catalogue, shape_bound * 1.1, max(orders, 1))
    fabric = (instance.width, instance.height)
    high = shape_bound
    while True:
        clock.require("looking for a time at which the kernels fit", "double")
        with clock.step("double"):
            shapes = _shapes_at(catalogue, high, *fabric)
            shelves = shapes.shelves.pack(candidates[0], instance.height)
        if shelves is not None:
            break
        high *= 1.25
        if high > 1e18:
            raise InfeasibleError(f"{instance.source}: the kernels do not fit the fabric at any time")
    shapes, packed = _smallest_target(catalogue, candidates, shape_bound, high, instance, clock, (shapes, shelves))
    best: tuple[float, float, _Layout, _Shapes] | None = None  # max_time, wires, layout, shapes

    def judged(layout: _Layout, shapes: _Shapes) -> tuple[float, float, _Layout, _Shapes]:
        return _layout_max_time(catalogue, shapes, layout), _layout_wirelength(layout, edges), layout, shapes

    for order, shelves in packed:
        candidate = judged(_layout(shapes, order, shelves, instance.width), shapes)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    assert best is not None  # _smallest_target returns at least one packing order
    # then local search: look for an order that packs strictly faster, level after level
    rng = np.random.default_rng(2020)
    while clock.allows("bisect", clock.search_share):
        shapes = _shapes_at(catalogue, best[0] * (1 - 1e-9), instance.width, instance.height)
        reordered = _reorder_to_pack(shapes.shelves, best[2].order, instance, rng, patience, clock)
        if reordered is None:
            break
        packing = shapes.shelves.pack(reordered, instance.height)
        assert packing is not None  # the search only returns orders that pack
        best = judged(_layout(shapes, reordered, packing, instance.width), shapes)
    # last, shorten the wires without giving up any speed: only shapes as fast as the best are allowed
    if not clock.expired(clock.polish_share):
        shapes = _shapes_at(catalogue, best[0], instance.width, instance.height)
        packing = shapes.shelves.pack(best[2].order, instance.height)
        if packing is not None:
            start = _layout(shapes, best[2].order, packing, instance.width)
            polished = _polish_wires(shapes, start, instance, rng, patience // 3, started + time_limit_s * 0.8)
            candidate = judged(polished, shapes)
            if candidate[1] < best[1]:
                best = candidate
    _, wires, layout, shapes = best
    kernels = _placed_kernels(instance, catalogue, shapes, layout)
    gp_bound = None
    remaining = clock.remaining(0.9)
    if with_gp_bound and remaining > 1.0 + GP_BOUND_S_PER_KERNEL * len(instance.kernels):
        try:
            gp_bound = gp_lower_bound(instance, time_limit_s=remaining)
        except PlacementError:
            gp_bound = None  # an auxiliary figure: the placement stands without it
    return IspdSolution(
        instance=instance,
        kernels=kernels,
        max_time=max(k["time"] for k in kernels),
        lower_bound=lower,
        wirelength=wires,
        solve_s=time.perf_counter() - started,
        gp_lower_bound=gp_bound,
        shape_lower_bound=shape_bound,
        orders_tried=len(candidates),
    )


def write_json(solution: IspdSolution, path: str | Path) -> None:
    write_text(path, json.dumps(solution.to_json(), indent=1) + "\n", "--json")
