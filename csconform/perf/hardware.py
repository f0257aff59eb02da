"""Hardware presets: the wafers (WSE-1/2/3), their systems and the clusters built from them.

Every number the performance model uses comes from here, and every number says where it comes
from: a row of ``public-facts#Hardware``, a section of another document of ``docs/sources.md``, or
a derivation from those (shown as a formula). Where no public figure exists we say "assumption"
and why we chose the value, so a reader can tell a published figure from a modelling choice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType

from csconform.arguments import check_integer
from csconform.errors import InvalidInputError, UnknownNameError

KIB = 1024
HOT_CHIPS_34_CLOCK_HZ = 1.1e9
CS2_SYSTEM_IO_BYTES_PER_S = 1.2e12 / 8  # 1.2 Tb/s per CS-2
ANDROMEDA_AI_FLOPS_PER_S = 1e18  # Cerebras, Andromeda announcement (2022-11): over 1 exaflop of AI compute
CS3_PUBLISHED_AI_FLOPS_PER_S = 125e15  # Cerebras, WSE-3 announcement (2024-03): 125 PFLOP/s peak AI compute
# estimate: the CS-3's AI figure scaled by Andromeda's dense / AI ratio (120 PFLOP/s dense / 1 EFLOP/s AI)
CS3_DENSE_FLOPS_PER_S_ESTIMATE = CS3_PUBLISHED_AI_FLOPS_PER_S * 120e15 / ANDROMEDA_AI_FLOPS_PER_S
WSE2_CORE_FLOPS_PER_S = 8.0 * HOT_CHIPS_34_CLOCK_HZ  # a WSE-2 core: 4-wide FP16 FMAC at 1.1 GHz


@dataclass(frozen=True)
class Wafer:
    """One wafer-scale engine inside one system, as the performance model sees it.

    ``fabric_width x fabric_height`` is the grid of cores the compiler may place kernels on (the
    usable SDK fabric, not the marketing core count, which is ``published_cores``).
    """

    name: str
    system: str
    published_cores: int
    fabric_width: int
    fabric_height: int
    memory_per_core_bytes: int
    on_chip_memory_bytes: float
    memory_bytes_per_s: float
    fabric_bits_per_s: float
    clock_hz: float
    flops_per_core_per_cycle: float
    system_io_bytes_per_s: float
    max_cluster_systems: int
    sources: Mapping[str, str] = field(repr=False)
    lowest_core_flops_per_s: float | None = None
    """Where the peak is an estimate: the lowest dense FLOP/s of one core the public facts allow (None:
    the peak rests on published figures)."""

    def __post_init__(self) -> None:
        missing = [
            f.name
            for f in fields(self)
            if f.name not in ("name", "sources", "system")
            and f.name not in self.sources
            and getattr(self, f.name) is not None
        ]
        if missing:
            raise ValueError(f"preset {self.name}: figures without a source: {missing}")

    @property
    def fabric_cores(self) -> int:
        return self.fabric_width * self.fabric_height

    @property
    def fabric_memory_bytes(self) -> float:
        """SRAM the placement can use: usable cores times memory per core."""
        return float(self.fabric_cores * self.memory_per_core_bytes)

    @property
    def peak_flops_per_s(self) -> float:
        """Dense FP16 peak of the placeable fabric: cores x FLOP/core/cycle x clock."""
        return self.fabric_cores * self.flops_per_core_per_cycle * self.clock_hz

    @property
    def peak_estimate_range(self) -> float:
        """How many times slower than its estimate the peak may be: the estimated per-core rate over the
        lowest the public facts allow (1 where the peak is not an estimate)."""
        if self.lowest_core_flops_per_s is None:
            return 1.0
        return self.flops_per_core_per_cycle * self.clock_hz / self.lowest_core_flops_per_s

    @property
    def link_bytes_per_cycle(self) -> float:
        """Fabric bandwidth per core per cycle: fabric_bits_per_s / 8 / published_cores / clock."""
        return self.fabric_bits_per_s / 8 / self.published_cores / self.clock_hz

    def source(self, figure: str) -> str:
        """Where ``figure`` (a field or property name) comes from."""
        if figure in self.sources:
            return self.sources[figure]
        derived = {
            "fabric_cores": "fabric_width x fabric_height",
            "fabric_memory_bytes": "fabric_cores x memory_per_core_bytes",
            "peak_flops_per_s": "fabric_cores x flops_per_core_per_cycle x clock_hz",
            "link_bytes_per_cycle": "fabric_bits_per_s / 8 / published_cores / clock_hz",
            "peak_estimate_range": "flops_per_core_per_cycle x clock_hz / lowest_core_flops_per_s (1 without it)",
        }
        if figure in derived:
            return "derived: " + derived[figure]
        raise UnknownNameError(f"no figure named {figure!r} in preset {self.name}")

    def figures(self) -> list[dict[str, object]]:
        """Every figure with its value and source (for reports and the spec checks)."""
        given = [f.name for f in fields(self) if f.name not in ("name", "system", "sources")]
        names = [name for name in given if getattr(self, name) is not None]
        names += ["fabric_cores", "fabric_memory_bytes", "peak_flops_per_s", "peak_estimate_range"]
        names += ["link_bytes_per_cycle"]
        return [{"figure": n, "value": getattr(self, n), "source": self.source(n)} for n in names]


@dataclass(frozen=True)
class MemoryX:
    """The off-wafer weight store that also runs the optimizer (weight streaming)."""

    min_capacity_bytes: float = 4e12
    max_capacity_bytes: float = 2.4e15
    max_parameters: float = 120e12
    sources: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType(
            {
                "min_capacity_bytes": "public-facts#Hardware: MemoryX holds 4 TB to 2.4 PB",
                "max_capacity_bytes": "public-facts#Hardware: MemoryX holds 4 TB to 2.4 PB",
                "max_parameters": "public-facts#Hardware: up to 120T parameters",
                "bytes_per_parameter": "derived: max_capacity_bytes / max_parameters = 2.4e15 / 120e12",
            }
        ),
        repr=False,
    )

    @property
    def bytes_per_parameter(self) -> float:
        """Storage per parameter implied by the published figures (FP32 weight + optimizer state)."""
        return self.max_capacity_bytes / self.max_parameters


@dataclass(frozen=True)
class SwarmX:
    """The broadcast/reduce tree between MemoryX and the systems.

    Broadcast replicates data in the tree, so each system receives a whole layer over its own
    system I/O link whatever the cluster size; only the tree depth (latency) grows with N.
    """

    fan_out: int = 2
    hop_latency_s: float = 2e-6
    sources: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType(
            {
                "fan_out": "assumption: binary tree, so depth = ceil(log2 N) (public-facts#Hardware: latency grows "
                "with log N)",
                "hop_latency_s": "assumption: 2 microseconds per switch hop (store-and-forward of one packet plus "
                "in-network add); no public figure",
            }
        ),
        repr=False,
    )

    def depth(self, systems: int) -> int:
        """Tree levels between MemoryX and ``systems`` leaves: ceil(log_fan_out(N))."""
        if systems < 1:
            raise InvalidInputError(f"systems must be >= 1, got {systems}")
        return math.ceil(math.log(systems, self.fan_out) - 1e-12) if systems > 1 else 0

    def latency_s(self, systems: int) -> float:
        return self.depth(systems) * self.hop_latency_s


def _wse1() -> Wafer:
    return Wafer(
        name="wse1",
        system="CS-1",
        published_cores=400_000,
        fabric_width=633,
        fabric_height=633,
        memory_per_core_bytes=48 * KIB,
        on_chip_memory_bytes=18e9,
        memory_bytes_per_s=9e15,
        fabric_bits_per_s=100e15,
        clock_hz=HOT_CHIPS_34_CLOCK_HZ,
        flops_per_core_per_cycle=8.0,
        system_io_bytes_per_s=CS2_SYSTEM_IO_BYTES_PER_S,
        max_cluster_systems=1,
        sources=MappingProxyType(
            {
                "published_cores": "public-facts#Hardware: WSE-1 ~400k cores",
                "fabric_width": "public-facts#Hardware: 633 x 633 tile grid (ISPD 2020 contest)",
                "fabric_height": "public-facts#Hardware: 633 x 633 tile grid (ISPD 2020 contest)",
                "memory_per_core_bytes": "public-facts#Hardware: 48 KB per tile",
                "on_chip_memory_bytes": "public-facts#Hardware: 18 GB",
                "memory_bytes_per_s": "public-facts#Hardware: 9 PB/s",
                "fabric_bits_per_s": "public-facts#Hardware: 100 Pb/s",
                "clock_hz": "assumption: no public WSE-1 clock; taken equal to the WSE-2 figure of 1.1 GHz "
                "(public-facts#Hardware, Hot Chips 34)",
                "flops_per_core_per_cycle": "assumption: same 4-wide FP16 FMAC core as WSE-2 -> 4 x 2 = 8 "
                "(public-facts#Hardware)",
                "system_io_bytes_per_s": "assumption: the CS-2 figure, 1.2 Tb/s = 150e9 B/s (public-facts#Hardware)",
                "max_cluster_systems": "appliance-mode-blog#What Was Training Like before Appliance Mode?: "
                "the earlier flow was limited to a single system",
            }
        ),
    )


def _wse2() -> Wafer:
    return Wafer(
        name="wse2",
        system="CS-2",
        published_cores=850_000,
        fabric_width=750,
        fabric_height=994,
        memory_per_core_bytes=48 * KIB,
        on_chip_memory_bytes=40e9,
        memory_bytes_per_s=20e15,
        fabric_bits_per_s=220e15,
        clock_hz=HOT_CHIPS_34_CLOCK_HZ,
        flops_per_core_per_cycle=8.0,
        system_io_bytes_per_s=CS2_SYSTEM_IO_BYTES_PER_S,
        max_cluster_systems=192,
        sources=MappingProxyType(
            {
                "published_cores": "public-facts#Hardware: WSE-2 850k cores",
                "fabric_width": "public-facts#Hardware: SDK fabric 757 x 996, ~750 x 994 usable",
                "fabric_height": "public-facts#Hardware: SDK fabric 757 x 996, ~750 x 994 usable",
                "memory_per_core_bytes": "public-facts#Hardware: 48 KB per core",
                "on_chip_memory_bytes": "public-facts#Hardware: 40 GB",
                "memory_bytes_per_s": "public-facts#Hardware: 20 PB/s",
                "fabric_bits_per_s": "public-facts#Hardware: 220 Pb/s",
                "clock_hz": "public-facts#Hardware: 1.1 GHz (Hot Chips 34); the 850 MHz SDK figure would give "
                "10.4 FLOP/core/cycle, inconsistent with the 4-wide SIMD",
                "flops_per_core_per_cycle": "derived: 7.5e15 FLOP/s / 850e3 cores / 1.1e9 Hz = 8.02, matching "
                "4-wide FP16 SIMD x 2 FLOP per FMAC = 8 (public-facts#Hardware)",
                "system_io_bytes_per_s": "public-facts#Hardware: 1.2 Tb/s per CS-2 = 1.2e12 / 8 B/s",
                "max_cluster_systems": "appliance-mode-blog#Introduction: clusters of up to 192 CS-2",
            }
        ),
    )


def _wse3() -> Wafer:
    return Wafer(
        name="wse3",
        system="CS-3",
        published_cores=900_000,
        fabric_width=762,
        fabric_height=1172,
        memory_per_core_bytes=48 * KIB,
        on_chip_memory_bytes=44e9,
        memory_bytes_per_s=21e15,
        fabric_bits_per_s=214e15,
        clock_hz=CS3_DENSE_FLOPS_PER_S_ESTIMATE / 900_000 / 16.0,
        flops_per_core_per_cycle=16.0,
        system_io_bytes_per_s=CS2_SYSTEM_IO_BYTES_PER_S,
        max_cluster_systems=2048,
        lowest_core_flops_per_s=WSE2_CORE_FLOPS_PER_S,
        sources=MappingProxyType(
            {
                "published_cores": "public-facts#Hardware: WSE-3 900k cores",
                "fabric_width": "public-facts#Hardware: fabric 762 x 1172",
                "fabric_height": "public-facts#Hardware: fabric 762 x 1172",
                "memory_per_core_bytes": "derived: 44 GB / 900k cores = 48.9e3 B, i.e. 48 KiB per core "
                "(public-facts#Hardware)",
                "on_chip_memory_bytes": "public-facts#Hardware: 44 GB",
                "memory_bytes_per_s": "public-facts#Hardware: 21 PB/s",
                "fabric_bits_per_s": "public-facts#Hardware: 214 Pb/s",
                "clock_hz": "assumption (an estimate; no published clock): 15e15 FLOP/s dense / 900k cores / "
                "16 FLOP/core/cycle = 1.04 GHz, where 15 PFLOP/s dense = the CS-3's 125 PFLOP/s AI compute "
                "(which counts sparsity, WSE-3 announcement 2024-03) x Andromeda's 120 PFLOP/s dense / "
                "1 EFLOP/s AI (2022-11); "
                "twice the CS-2's 7.5 PFLOP/s, as Cerebras states the WSE-3 doubles the WSE-2",
                "flops_per_core_per_cycle": "estimate: 8-wide FP16 SIMD (a press estimate, The Next Platform "
                "2024-03-14; public-facts#Hardware) x 2 FLOP per FMAC = 16",
                "system_io_bytes_per_s": "assumption: the CS-2 figure, 1.2 Tb/s (public-facts#Hardware)",
                "max_cluster_systems": "public-facts#Hardware: up to 2048 CS-3 (2024 announcements)",
                "lowest_core_flops_per_s": "assumption: a WSE-3 core computes at least as fast as a WSE-2 core "
                "(4-wide FP16 FMAC at 1.1 GHz: 8.8e9 FLOP/s); Cerebras says only that the WSE-3 widens the SIMD, "
                "so the public facts place its dense peak between this and the 8-wide estimate "
                "(public-facts#Hardware)",
            }
        ),
    )


WAFERS: Mapping[str, Wafer] = MappingProxyType({w.name: w for w in (_wse1(), _wse2(), _wse3())})
MEMORYX = MemoryX()
SWARMX = SwarmX()
RELEASE_1_5_MAX_SYSTEMS = 4  # appliance-mode-blog#Introduction: Release 1.5 supports up to 4 CS-2
ANDROMEDA = {"systems": 16, "peak_flops_per_s": 120e15, "published_cores": 13.5e6}  # public-facts#Hardware
CS2_PUBLISHED_PEAK_FLOPS_PER_S = 7.5e15  # public-facts#Hardware: ~7.5 PFLOP/s dense FP16 per CS-2

_ALIASES = {"cs1": "wse1", "cs2": "wse2", "cs3": "wse3"}


def get_wafer(name: str | Wafer) -> Wafer:
    """Look a preset up by name (``wse2``, ``WSE-2``, ``cs2`` ...); unknown names list the known ones."""
    if isinstance(name, Wafer):
        return name
    key = str(name).lower().replace("-", "").replace("_", "")
    key = _ALIASES.get(key, key)
    if key not in WAFERS:
        raise UnknownNameError(f"unknown wafer {name!r}; known wafers: {', '.join(sorted(WAFERS))}")
    return WAFERS[key]


def check_cluster_size(wafer: Wafer, systems: int) -> None:
    """Refuse a cluster larger than the preset's documented maximum (or smaller than one system)."""
    systems = check_integer("systems", systems, minimum=1)
    if systems > wafer.max_cluster_systems:
        raise InvalidInputError(
            f"{systems} {wafer.system} systems requested; a {wafer.system} cluster has at most "
            f"{wafer.max_cluster_systems} ({wafer.source('max_cluster_systems')})"
        )
