"""The shared radio medium on a network picture: each node's activity in the run drawn
(node size: packets it sent; fill: receptions it lost to interference or half-duplex),
the MAC's schedule (TDMA: each node's slot as its fill colour) and, around a chosen
node, its radio, carrier-sense and interference ranges.

:class:`MediumPicture` holds what is drawn; :mod:`bflnet.cli.network_medium` fills it
from the network a run builds and from the run's rows of a table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.patches import Circle
from matplotlib.ticker import MaxNLocator

#: TDMA frames up to this many slots take the qualitative colours of ``tab20``; longer
#: ones a rainbow of one colour per slot, up to :data:`MAX_SLOT_COLOURS` (more: repeated).
QUALITATIVE_SLOTS = 20
MAX_SLOT_COLOURS = 256
#: Node sizes, as a share of the plain size: a node that sent nothing, the busiest one.
SMALLEST, LARGEST = 0.25, 2.0
#: How the ranges are drawn: (what, line style, colour).
RANGE_STYLES = (("radio range", "-", "tab:blue"), ("carrier-sense range", "--", "tab:green"),
                ("interference range", ":", "tab:red"))


@dataclass
class MediumPicture:
    """The shared medium of one picture. ``mac``: its name; ``slots``: each node's TDMA
    slot (``None``: not TDMA) of ``frame_slots``; ranges in metres around ``focus`` (a
    node, or ``None``: no ranges drawn): ``radio_range_m`` (where the mean SNR falls to
    the threshold), ``sense_range_m`` (CSMA's carrier sense; ``None``: no carrier sense, or
    by received power, not a circle)
    and ``interference_range_m`` (beyond it a sender is not counted as interference);
    a run's activity: ``sent`` packets per node (labelled ``sent_label``), ``lost``
    receptions per node, and ``summary``, a line of the run's totals."""

    mac: str
    slots: Mapping[int, int] | None = None
    frame_slots: int = 0
    radio_range_m: float = math.nan
    sense_range_m: float | None = None
    interference_range_m: float = math.nan
    focus: int | None = None
    sent: Mapping[int, float] | None = None
    sent_label: str = "packets sent"
    lost: Mapping[int, float] | None = None
    summary: str = ""


def node_sizes(medium: MediumPicture, nodes: Sequence[int], size: float) -> np.ndarray:
    """Marker areas: ``size`` each, or from :data:`SMALLEST` to :data:`LARGEST` times it
    in proportion to the packets each node sent."""
    if not medium.sent:
        return np.full(len(nodes), float(size))
    sent = np.array([medium.sent.get(n, 0) for n in nodes], dtype=float)
    return _area(sent, max(medium.sent.values()), size)


def _area(sent: Any, top: float, size: float) -> Any:
    """The marker area of ``sent`` packets when the busiest node sent ``top``."""
    return size * (SMALLEST + (LARGEST - SMALLEST) * np.asarray(sent) / max(top, 1.0))


def draw_medium_nodes(fig: Any, ax: Any, pts: np.ndarray, nodes: Sequence[int],
                      medium: MediumPicture, size: float, labelled: bool) -> None:
    """The nodes of a shared medium: size by packets sent, fill by TDMA slot or by
    receptions lost (with a colour bar), a legend of the sizes."""
    sizes = node_sizes(medium, nodes, size)
    lost = (np.array([medium.lost.get(n, 0) for n in nodes], dtype=float)
            if medium.lost is not None else None)
    style = dict(s=sizes, edgecolors="black", linewidths=0.6, zorder=3)
    if medium.slots is not None:
        frame = max(medium.frame_slots, 1)
        colours = slot_colours(frame)
        slot = np.array([medium.slots.get(n, 0) for n in nodes], dtype=float)
        art = ax.scatter(pts[:, 0], pts[:, 1], c=slot % len(colours),
                         cmap=ListedColormap(colours),
                         norm=BoundaryNorm(np.arange(len(colours) + 1) - 0.5, len(colours)),
                         **style)
        bar = fig.colorbar(art, ax=ax, shrink=0.8)
        bar.locator = MaxNLocator(integer=True, nbins=min(len(colours), 12))
        bar.update_ticks()
        repeat = " (colours repeat)" if frame > len(colours) else ""
        bar.set_label(f"TDMA slot of a frame of {frame}{repeat}")
        if lost is not None and lost.any() and labelled:
            for (x, y), n in zip(pts, lost, strict=True):
                if n:
                    ax.annotate(f"{n:.0f} lost", (x, y), xytext=(6, -9),
                                textcoords="offset points", fontsize=6, color="tab:red")
    elif lost is not None:
        art = ax.scatter(pts[:, 0], pts[:, 1], c=lost, cmap="Reds", vmin=0,
                         vmax=max(float(lost.max()), 1.0), **style)
        bar = fig.colorbar(art, ax=ax, shrink=0.8,
                           label="receptions lost at the node (collision, half-duplex)")
        bar.locator = MaxNLocator(integer=True)
        bar.update_ticks()
    else:
        ax.scatter(pts[:, 0], pts[:, 1], color="tab:blue", **style)
    if medium.sent:
        top = max(medium.sent.values())
        for value in sorted({top, round(top / 2)} - {0}):
            ax.scatter([], [], s=float(_area(value, top, size)), color="0.8",
                       edgecolors="black", linewidths=0.6,
                       label=f"{value:.0f} {medium.sent_label.split(' (')[0]}")


def slot_colours(frame: int) -> list[Any]:
    """One colour per TDMA slot of a ``frame``-slot frame (repeating beyond
    :data:`MAX_SLOT_COLOURS`)."""
    from matplotlib import colormaps

    if frame <= QUALITATIVE_SLOTS:
        return [colormaps["tab20"](i) for i in range(frame)]
    n = min(frame, MAX_SLOT_COLOURS)
    return [colormaps["turbo"](i / (n - 1)) for i in range(n)]


def draw_ranges(ax: Any, xy: Mapping[int, np.ndarray], medium: MediumPicture) -> None:
    """Circles of the focus node's ranges (radio, carrier sense, interference) and a ring
    around it; the view stays on the nodes (a range may reach beyond them: the circles
    do not widen the axes' limits)."""
    if medium.focus is None or medium.focus not in xy:
        return
    centre = xy[medium.focus]
    others = np.array([p for n, p in xy.items() if n != medium.focus]).reshape(-1, 2)
    distance = np.hypot(*(others - centre).T)
    radii = (medium.radio_range_m, medium.sense_range_m, medium.interference_range_m)
    for (what, line, colour), radius in zip(RANGE_STYLES, radii, strict=True):
        if radius is None or not math.isfinite(radius):
            continue
        ax.add_artist(Circle(tuple(centre), radius, fill=False, linestyle=line, color=colour,
                             linewidth=1.4, zorder=2))
        within = int((distance <= radius).sum())
        ax.plot([], [], linestyle=line, color=colour, linewidth=1.4,
                label=f"node {medium.focus}: {what} {radius:.3g} m ({within} of "
                      f"{len(distance)} nodes within)")
    ax.scatter([centre[0]], [centre[1]], s=420, facecolors="none", edgecolors="black",
               linewidths=2.2, zorder=4)
