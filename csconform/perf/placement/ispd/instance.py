"""Cerebras' ISPD 2020 kernel-placement instances: what one is, and the parser of ``.kgraph`` files.

An instance (``.kgraph``, see ``benchmarks/ispd2020/README.md``) lists the kernels of a network;
each kernel is one convolution (``conv``) or a block of three (``dblock``) or four (``cblock``)
convolutions, and the connections between them.  Its header comment gives the fabric and the
memory limit.  A file that cannot be read as text is the document reader's
:class:`~csconform.errors.UnreadableDocumentError`; every problem with its contents is an
:class:`~csconform.errors.InstanceFormatError` naming the file and the line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from csconform.documents import read_text
from csconform.errors import InstanceFormatError

MAX_PARAMETER = 1_000_000
# the twenty public contest instances, shipped with the package (their SOURCE.md says where from)
BUNDLED_INSTANCES = Path(__file__).resolve().parents[2] / "instances" / "ispd2020"

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


def kernel_edges(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """Kernel positions at both ends of every line between two kernels (input/output lines left out)."""
    position = {kernel.index: i for i, kernel in enumerate(instance.kernels)}
    pairs = [(position[src], position[dst]) for src, dst in instance.edges if src in position and dst in position]
    ends = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return ends[:, 0], ends[:, 1]
