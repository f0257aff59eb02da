"""The one drawer of a placement: every kernel's rectangle of cores on the fabric, shaded by a share.

A pipelined plan's wafer map (``csconform plan --png``, :mod:`csconform.perf.figures`; the share is a
kernel's utilisation) and the ISPD 2020 report's placement maps (:mod:`csconform.report.ispd`; the
share is a kernel's time over the slowest one's) are both drawn here.  A rectangle large enough to
hold its name is labelled.  matplotlib with the Agg backend, so it renders without a display.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

LABELLED_SHARE_OF_FABRIC = 0.01
"""A rectangle is labelled when it covers at least this share of the fabric (smaller ones cannot hold a name)."""


@dataclass(frozen=True)
class Region:
    """One kernel's rectangle of cores, (x, y) its lower-left core, and its shade in [0, 1]."""

    name: str
    x: int
    y: int
    width: int
    height: int
    share: float


def fabric_map(
    regions: Sequence[Region], fabric_width: int, fabric_height: int, title: str, share_label: str
) -> plt.Figure:
    """The fabric with one rectangle per region, coloured by its share (viridis: dark 0, yellow 1)."""
    figure, axes = plt.subplots(figsize=(6, 6 * fabric_height / fabric_width))
    colours = plt.get_cmap("viridis")
    smallest_labelled = LABELLED_SHARE_OF_FABRIC * fabric_width * fabric_height
    for region in regions:
        axes.add_patch(
            Rectangle(
                (region.x, region.y),
                region.width,
                region.height,
                facecolor=colours(region.share),
                edgecolor="white",
                linewidth=0.6,
            )
        )
        if region.width * region.height >= smallest_labelled:
            axes.text(
                region.x + region.width / 2,
                region.y + region.height / 2,
                region.name,
                ha="center",
                va="center",
                fontsize=6,
                color="white" if region.share < 0.5 else "black",
            )
    axes.set_xlim(0, fabric_width)
    axes.set_ylim(0, fabric_height)
    axes.set_aspect("equal")
    axes.set_xlabel("fabric x (cores)")
    axes.set_ylabel("fabric y (cores)")
    axes.set_title(title, fontsize=9)
    mappable = plt.cm.ScalarMappable(cmap=colours, norm=plt.Normalize(0, 1))
    figure.colorbar(mappable, ax=axes, fraction=0.04, label=share_label)
    return figure
