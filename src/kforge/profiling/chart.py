"""A profile as a PNG chart, for models that accept images.

Left: the top kernels' shares of kernel time as horizontal bars. Right: the roofline (measured memory and
compute roofs, log-log) with the call's achieved point. matplotlib is drawn through its Agg canvas on a
`Figure` of its own, never through pyplot, so no global state or display is touched and the worker or the
harness can draw from any thread.
"""

from __future__ import annotations

import io
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
_MEMORY_COLOR = "#2a9d8f"
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
    figure = Figure(figsize=(12 if with_roofline else 7.5, 5 if with_roofline else 4.4), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    if with_roofline:
        bars, roof = figure.subplots(1, 2, width_ratios=(1.3, 1))
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
    intensity = roofline.arithmetic_intensity
    low = min(ridge, intensity or ridge) / 30
    high = max(ridge, intensity) * 30
    axes.set_xscale("log")
    axes.set_yscale("log")
    # Roofs, point and verdict are labelled in a legend under the plot: labels written beside the lines
    # collide with them or leave the panel at some shapes of the plot.
    axes.plot([low, ridge], [low * roofline.peak_bytes_per_s, roofline.peak_flops_per_s], color=_MEMORY_COLOR,
              linewidth=2.2, label=f"memory roof {format_quantity(roofline.peak_bytes_per_s, 'B/s')}")
    axes.plot([ridge, high], [roofline.peak_flops_per_s] * 2, color=_ROOF_COLOR, linewidth=2.2,
              label=f"compute roof {format_quantity(roofline.peak_flops_per_s, 'FLOP/s')}")
    verdict = f"{roofline.fraction_of_bound:.1%} of the {roofline.bound} bound"
    bottom = low * roofline.peak_bytes_per_s / 3
    if intensity > 0 and roofline.achieved_flops_per_s > 0:
        axes.plot([intensity], [roofline.achieved_flops_per_s], "o", color=_POINT_COLOR, markersize=9,
                  label=f"achieved {format_quantity(roofline.achieved_flops_per_s, 'FLOP/s')}: {verdict}")
        bottom = min(roofline.achieved_flops_per_s / 3, bottom)
    else:
        # No FLOPs at all (a copy or layout change): no point to plot; the bandwidth is the story.
        axes.plot([], [], " ", label=f"no FLOPs; {format_quantity(roofline.achieved_bytes_per_s, 'B/s')}: {verdict}")
    axes.set_xlim(low, high)
    axes.set_ylim(bottom, roofline.peak_flops_per_s * 4)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8.5, frameon=False)
    axes.set_xlabel("FLOP per byte of minimum traffic", fontsize=9)
    axes.set_ylabel("FLOP/s", fontsize=9)
    axes.tick_params(labelsize=8)
    method = "" if roofline.flops_method == "flop_counter" else " (elementwise count)"
    axes.set_title(f"Roofline, per call: {format_quantity(roofline.flops_per_call, 'FLOP')}{method}\n"
                   f"{format_quantity(roofline.min_bytes_per_call, 'B')} minimum traffic", fontsize=10)
    axes.grid(True, which="major", linewidth=0.4, alpha=0.5)
