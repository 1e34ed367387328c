"""A profile as a PNG chart, for models that accept images.

Left: the top kernels' shares of kernel time as horizontal bars. Right: the roofline (measured memory and
compute roofs, log-log) with the call's achieved point. matplotlib is drawn through its Agg canvas on a
`Figure` of its own, never through pyplot, so no global state or display is touched and the worker or the
harness can draw from any thread.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

from kforge.profiling.render import format_quantity, format_seconds, short_name
from kforge.profiling.schema import Profile, Roofline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

TOP_BARS = 10
_NAME_WIDTH = 44
_BAR_COLOR = "#3b6ea8"
_REST_COLOR = "#9aa5b1"
_ROOF_COLOR = "#444444"
_POINT_COLOR = "#d1495b"


class ChartUnavailable(RuntimeError):
    """matplotlib is not installed; the message says how to get it."""


def render_chart(profile: Profile, top: int = TOP_BARS, dpi: int = 110) -> bytes:
    """The profile as PNG bytes: kernel time shares and, when the profile has one, its roofline."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ChartUnavailable("charts need matplotlib: pip install matplotlib") from None
    with_roofline = profile.roofline is not None
    figure = Figure(figsize=(11.5 if with_roofline else 7.5, 4.4), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    if with_roofline:
        bars, roof = figure.subplots(1, 2, width_ratios=(1.45, 1))
    else:
        bars, roof = figure.subplots(1, 1), None
    _draw_shares(bars, profile, top)
    if roof is not None and profile.roofline is not None:
        _draw_roofline(roof, profile.roofline)
    figure.suptitle(_title(profile), fontsize=11)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _title(profile: Profile) -> str:
    time_us = profile.wall_time_us_per_call or profile.device_time_us_per_call
    label = "wall" if profile.wall_time_us_per_call else "kernel time"
    return (f"{profile.platform} ({profile.device}) · {profile.source} · {label} {format_seconds(time_us / 1e6)}"
            f"/call · {profile.launches_per_call:g} launches/call")


def _draw_shares(axes: Axes, profile: Profile, top: int) -> None:
    shown = list(profile.rows[:top])
    labels = [short_name(row.name, _NAME_WIDTH) for row in shown]
    shares = [row.share * 100 for row in shown]
    colors = [_BAR_COLOR] * len(shown)
    rest = profile.rows[top:]
    if rest:
        labels.append(f"({len(rest)} more)")
        shares.append(sum(row.share for row in rest) * 100)
        colors.append(_REST_COLOR)
    positions = list(range(len(labels)))
    axes.barh(positions, shares, color=colors)
    axes.set_yticks(positions, labels, fontsize=8.5)
    axes.invert_yaxis()  # largest on top, reading order
    axes.set_xlim(0, max([*shares, 1.0]) * 1.25)
    axes.set_xlabel(f"share of {profile.row_kind} time (%)", fontsize=9)
    axes.set_title(f"Where the time goes: {format_seconds(profile.device_time_us_per_call / 1e6)} of "
                   f"{profile.row_kind}s per call", fontsize=10)
    means = [format_seconds(row.mean_us / 1e6) for row in shown]
    for index, (position, share) in enumerate(zip(positions, shares, strict=True)):
        note = f"{share:.1f}%" + (f" · {means[index]} each" if index < len(means) else "")
        axes.text(share, position, " " + note, va="center", fontsize=8)
    axes.tick_params(axis="x", labelsize=8)
    axes.spines[["top", "right"]].set_visible(False)


def _draw_roofline(axes: Axes, roofline: Roofline) -> None:
    ridge = roofline.ridge_intensity
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("arithmetic intensity (FLOP / byte of minimum traffic)", fontsize=9)
    axes.set_ylabel("FLOP/s", fontsize=9)
    axes.tick_params(labelsize=8)
    intensity = roofline.arithmetic_intensity
    low = min(ridge, intensity or ridge) / 30
    high = max(ridge, intensity) * 30
    xs = [low, ridge, high]
    axes.plot(xs, [min(roofline.peak_flops_per_s, x * roofline.peak_bytes_per_s) for x in xs], color=_ROOF_COLOR,
              linewidth=2)
    axes.text(high / 1.3, roofline.peak_flops_per_s * 1.25,
              f"compute roof {format_quantity(roofline.peak_flops_per_s, 'FLOP/s')}", fontsize=8, ha="right")
    verdict = f"{roofline.fraction_of_bound:.1%} of the {roofline.bound} bound"
    if intensity > 0 and roofline.achieved_flops_per_s > 0:
        axes.plot([intensity], [roofline.achieved_flops_per_s], "o", color=_POINT_COLOR, markersize=9)
        axes.annotate(f"{format_quantity(roofline.achieved_flops_per_s, 'FLOP/s')}\n{verdict}",
                      (intensity, roofline.achieved_flops_per_s), textcoords="offset points", xytext=(9, 0),
                      fontsize=9, color=_POINT_COLOR, ha="left", va="center")
        bottom = min(roofline.achieved_flops_per_s, low * roofline.peak_bytes_per_s) / 3
    else:
        # No FLOPs at all (a copy or layout change): no point on the plot, the bandwidth is the story.
        axes.text(0.5, 0.1, f"no FLOPs counted: {verdict}", transform=axes.transAxes, ha="center", fontsize=9,
                  color=_POINT_COLOR)
        bottom = low * roofline.peak_bytes_per_s / 3
    axes.set_ylim(bottom, roofline.peak_flops_per_s * 4)
    axes.set_xlim(low, high)
    _label_memory_roof(axes, roofline, low, ridge)
    method = "" if roofline.flops_method == "flop_counter" else " (elementwise count)"
    axes.set_title(f"Roofline: {format_quantity(roofline.flops_per_call, 'FLOP')}{method}, "
                   f"{format_quantity(roofline.min_bytes_per_call, 'B')} per call", fontsize=10)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)


def _label_memory_roof(axes: Axes, roofline: Roofline, low: float, ridge: float) -> None:
    """Write the bandwidth along the sloped roof, turned to the slope as drawn (display coordinates)."""
    start = low * (ridge / low) ** 0.15
    end = low * (ridge / low) ** 0.6
    points = axes.transData.transform([(start, start * roofline.peak_bytes_per_s),
                                       (end, end * roofline.peak_bytes_per_s)])
    angle = math.degrees(math.atan2(points[1][1] - points[0][1], points[1][0] - points[0][0]))
    axes.annotate(f"memory roof {format_quantity(roofline.peak_bytes_per_s, 'B/s')}",
                  (start, start * roofline.peak_bytes_per_s), textcoords="offset points", xytext=(-4, 6),
                  rotation=angle, rotation_mode="anchor", fontsize=8)
