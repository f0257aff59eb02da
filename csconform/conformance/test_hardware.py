"""Hardware presets of the performance model against the published figures (specs/hardware.yaml).

csconform.perf is the harness's own model, not the implementation under test, so these checks
import it directly.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from csconform.errors import CapacityError, InvalidInputError, UnknownNameError
from csconform.perf import hardware
from csconform.perf.execution.streaming import STREAMED_WEIGHT_BYTES_PER_PARAM, weight_streaming
from csconform.perf.hardware import MEMORYX, SWARMX, get_wafer
from csconform.perf.models.layer import Layer
from csconform.perf.plan import plan
from csconform.spec import default_specs_dir, load_registry

# These checks exercise csconform's own performance model, not the implementation under test.
pytestmark = pytest.mark.capability("performance")

GB = 1e9


def close(value: float, target: float, rel: float) -> bool:
    return math.isclose(value, target, rel_tol=rel)


FIGURES = ("fabric_width", "fabric_height", "on_chip_memory_bytes", "memory_bytes_per_s", "fabric_bits_per_s")


def assert_published_figures(name: str, cores: float, cores_rel: float, figures: tuple[float, ...]) -> None:
    """The preset ``name`` has the published core count (within ``cores_rel``) and ``figures``, the
    values of FIGURES in order."""
    w = get_wafer(name)
    assert close(w.published_cores, cores, cores_rel)
    assert {figure: getattr(w, figure) for figure in FIGURES} == dict(zip(FIGURES, figures, strict=True))


@pytest.mark.spec("HW-001")
def test_wse1_figures():
    assert_published_figures("wse1", 400e3, 0.02, (633, 633, 18 * GB, 9e15, 100e15))
    assert get_wafer("wse1").memory_per_core_bytes == 48 * 1024


@pytest.mark.spec("HW-002")
def test_wse2_figures():
    assert_published_figures("WSE-2", 850_000, 0.0, (750, 994, 40 * GB, 20e15, 220e15))
    w = get_wafer("wse2")
    assert w.fabric_width <= 757 and w.fabric_height <= 996
    assert w.memory_per_core_bytes == 48 * 1024


@pytest.mark.spec("HW-003")
def test_wse3_figures():
    assert_published_figures("wse3", 900_000, 0.0, (762, 1172, 44 * GB, 21e15, 214e15))
    assert get_wafer("wse3").flops_per_core_per_cycle == 2 * get_wafer("wse2").flops_per_core_per_cycle


@pytest.mark.spec("HW-003")
def test_the_wse3_peak_is_an_estimate_with_the_range_the_public_facts_leave_it():
    """The WSE-3's dense peak is estimated (8-wide SIMD, an unpublished clock); the public facts only place
    a core between a WSE-2 core's rate and that estimate. The other presets' peaks carry no range."""
    cs3, cs2 = get_wafer("wse3"), get_wafer("wse2")
    assert cs3.lowest_core_flops_per_s == cs2.flops_per_core_per_cycle * cs2.clock_hz
    assert cs3.peak_estimate_range == pytest.approx(cs3.peak_flops_per_s / cs3.fabric_cores / (8 * 1.1e9))
    assert 1.8 < cs3.peak_estimate_range < 2.0
    assert get_wafer("wse2").peak_estimate_range == get_wafer("wse1").peak_estimate_range == 1.0
    assert "lowest_core_flops_per_s" in cs3.sources
    assert "lowest_core_flops_per_s" not in [row["figure"] for row in cs2.figures()]


@pytest.mark.spec("HW-004")
def test_cs2_peak_and_andromeda():
    w = get_wafer("wse2")
    peak = w.published_cores * w.flops_per_core_per_cycle * w.clock_hz
    assert close(peak, hardware.CS2_PUBLISHED_PEAK_FLOPS_PER_S, 0.02)
    assert close(hardware.ANDROMEDA["systems"] * peak, hardware.ANDROMEDA["peak_flops_per_s"], 0.02)
    assert close(hardware.ANDROMEDA["systems"] * w.published_cores, hardware.ANDROMEDA["published_cores"], 0.02)
    assert "7.5e15" in w.source("flops_per_core_per_cycle")


@pytest.mark.spec("HW-005")
@pytest.mark.parametrize("name", ["wse1", "wse2", "wse3"])
def test_memory_per_core_consistent_with_total(name):
    w = get_wafer(name)
    assert close(w.published_cores * w.memory_per_core_bytes, w.on_chip_memory_bytes, 0.10)
    # the placeable fabric holds no more than the published SRAM
    assert w.fabric_memory_bytes <= w.on_chip_memory_bytes * 1.10


@pytest.mark.spec("HW-006")
def test_cs2_system_io_sets_weight_streaming_transfer():
    w = get_wafer("wse2")
    assert w.system_io_bytes_per_s == 1.2e12 / 8
    layer = Layer("dense", 4096, 4096, 1, name="d")
    result = weight_streaming([layer], w, systems=1, batch_per_system=1)
    expected = layer.params * STREAMED_WEIGHT_BYTES_PER_PARAM / 150e9
    assert result.layers[0].weights_in_s == pytest.approx(expected)


@pytest.mark.spec("HW-007")
def test_memoryx_capacity():
    assert MEMORYX.min_capacity_bytes == 4e12
    assert MEMORYX.max_capacity_bytes == 2.4e15
    assert MEMORYX.max_parameters == 120e12
    assert MEMORYX.bytes_per_parameter == pytest.approx(20.0)
    small = [Layer("dense", 1000, 1000, 1, name="d")]
    assert weight_streaming(small, "wse2").params == 1_001_000
    too_big = [Layer("dense", 11_000_000, 11_000_000, 1, name="huge", bias=False)]  # 121e12 params
    with pytest.raises(CapacityError, match="MemoryX"):
        weight_streaming(too_big, "wse2")


@pytest.mark.spec("HW-008")
@given(st.integers(min_value=1, max_value=2048))
def test_swarmx_depth_is_log2(n):
    assert SWARMX.depth(n) == math.ceil(math.log2(n))
    assert SWARMX.depth(2 * n) == SWARMX.depth(n) + 1
    assert SWARMX.latency_s(n) == SWARMX.depth(n) * SWARMX.hop_latency_s


@pytest.mark.spec("HW-008")
def test_swarmx_at_cluster_sizes():
    assert SWARMX.latency_s(1) == 0
    assert SWARMX.depth(192) == 8
    assert SWARMX.latency_s(192) > SWARMX.latency_s(96) > SWARMX.latency_s(2) > 0


@pytest.mark.spec("HW-009")
def test_cs2_cluster_limit():
    assert plan("gpt3_xl", "wse2", systems=192, batch=192).systems == 192
    for bad in (193, 0):
        with pytest.raises(InvalidInputError, match="192|positive"):
            plan("gpt3_xl", "wse2", systems=bad)


@pytest.mark.spec("HW-010")
def test_cs3_cluster_limit():
    w = get_wafer("wse3")
    hardware.check_cluster_size(w, 2048)
    assert plan("gpt2_small", "wse3", systems=2048, batch=2048).systems == 2048
    with pytest.raises(InvalidInputError, match="2048"):
        plan("gpt2_small", "wse3", systems=2049)


@pytest.mark.spec("HW-011")
def test_192_cs2_is_more_than_150_million_cores():
    w = get_wafer("wse2")
    assert w.max_cluster_systems == 192
    assert w.max_cluster_systems * w.published_cores > 150e6


# Every section a figure may cite: ``ID#Section`` of a document registered in specs/sources.yaml.
_CITABLE = [f"{d.id}#{section}" for d in load_registry(default_specs_dir()).documents for section in d.sections]


@pytest.mark.spec("HW-013")
@pytest.mark.parametrize("name", ["wse1", "wse2", "wse3"])
def test_every_figure_has_a_source(name):
    w = get_wafer(name)
    rows = w.figures()
    assert len(rows) >= 14
    for row in rows:
        source = row["source"]
        assert isinstance(source, str) and source.strip()
        assert any(citation in source for citation in _CITABLE) or source.startswith(("derived", "assumption")), source
    for extra in (MEMORYX, SWARMX):
        assert all(isinstance(s, str) and s for s in extra.sources.values())
    with pytest.raises(UnknownNameError):
        w.source("no_such_figure")


@pytest.mark.spec("HW-014")
@pytest.mark.parametrize("alias", ["wse2", "WSE-2", "cs2", "CS-2", "wse_2"])
def test_wafer_aliases(alias):
    assert get_wafer(alias).name == "wse2"


@pytest.mark.spec("HW-014")
def test_unknown_wafer_lists_known():
    with pytest.raises(UnknownNameError) as info:
        get_wafer("wse9")
    for known in ("wse1", "wse2", "wse3"):
        assert known in str(info.value)


@pytest.mark.spec("HW-015")
def test_cs1_is_single_system():
    w = get_wafer("wse1")
    hardware.check_cluster_size(w, 1)
    with pytest.raises(InvalidInputError):
        hardware.check_cluster_size(w, 2)
