"""The one drawer of a placement (csconform.perf.placement.fabric_map): what it draws, not how it looks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from csconform.perf.figures import write_figure
from csconform.perf.placement.fabric_map import LABELLED_SHARE_OF_FABRIC, Region, fabric_map

WIDTH, HEIGHT = 100, 50


@pytest.fixture
def drawn():
    regions = [
        Region("large", 0, 0, 40, 50, 1.0),
        Region("dark", 40, 0, 30, 20, 0.1),
        Region("tiny", 90, 40, 2, 2, 0.5),  # 4 cores of 5,000: too small to hold its name
    ]
    figure = fabric_map(regions, WIDTH, HEIGHT, "a title", "share label")
    yield regions, figure
    plt.close(figure)


def test_every_region_is_one_rectangle_where_the_placement_puts_it_shaded_by_its_share(drawn) -> None:
    regions, figure = drawn
    axes = figure.axes[0]
    rectangles = [patch for patch in axes.patches if isinstance(patch, Rectangle)]
    assert [(r.get_x(), r.get_y(), r.get_width(), r.get_height()) for r in rectangles] == [
        (region.x, region.y, region.width, region.height) for region in regions
    ]
    viridis = plt.get_cmap("viridis")
    for rectangle, region in zip(rectangles, regions, strict=True):
        assert rectangle.get_facecolor() == pytest.approx(to_rgba(viridis(region.share)))
    assert axes.get_xlim() == (0, WIDTH) and axes.get_ylim() == (0, HEIGHT)
    assert axes.get_title() == "a title"


def test_only_regions_large_enough_are_labelled_legibly_on_their_shade(drawn) -> None:
    regions, figure = drawn
    labels = {text.get_text(): text for text in figure.axes[0].texts}
    large_enough = [r.name for r in regions if r.width * r.height >= LABELLED_SHARE_OF_FABRIC * WIDTH * HEIGHT]
    assert sorted(labels) == sorted(large_enough) == ["dark", "large"]
    assert labels["large"].get_position() == (20, 25)
    assert to_rgba(labels["large"].get_color()) == to_rgba("black")  # on yellow
    assert to_rgba(labels["dark"].get_color()) == to_rgba("white")  # on dark blue


def test_the_colour_bar_names_the_share(drawn) -> None:
    _, figure = drawn
    colour_bar = figure.axes[1]
    assert colour_bar.get_ylabel() == "share label"


def test_a_written_map_is_a_png_file_and_its_figure_is_closed(drawn, tmp_path) -> None:
    _, figure = drawn
    written = write_figure(figure, tmp_path / "map.png")
    assert written == tmp_path / "map.png" and written.read_bytes().startswith(b"\x89PNG")
    assert not plt.fignum_exists(figure.number)
