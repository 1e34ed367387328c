"""A profile as a compact text table, for models that read text only.

The table has to fit in a prompt beside the kernel's source, so it is a few hundred tokens at most: a
header with the per-call totals and the roofline verdict, then the top kernels by time, the rest summed
into one line. Kernel names are shortened (C++ signatures and template arguments cut) to what identifies
the kernel.
"""

from __future__ import annotations

import re

from kforge.profiling.schema import Profile, Roofline

TOP_ROWS = 8
NAME_WIDTH = 64

_ANONYMOUS = re.compile(r"\(anonymous namespace\)::")
_RETURN_TYPE = re.compile(r"^(?:void|auto)\s+")


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """'void at::native::(anonymous namespace)::k<4, F>(int, ...)' -> 'at::native::k<4, F>', cut to `width`."""
    text = _RETURN_TYPE.sub("", _ANONYMOUS.sub("", name.strip()))
    text = _strip_parameters(text)
    if len(text) <= width:
        return text
    base, _, templates = text.partition("<")
    if len(base) + 3 > width:
        # Generated names (cuBLAS, CUTLASS) say what they are at the start and how at the end: keep both.
        head = (width - 1) * 3 // 5
        return base[:head] + "…" + base[-(width - 1 - head):] if len(base) > width else base
    if not templates:
        return base
    return base + "<" + templates[: width - len(base) - 3] + "…>"


def _strip_parameters(text: str) -> str:
    """Drop a trailing '(...)' parameter list, balancing parentheses from the end."""
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            return text[:index].rstrip() or text
    return text


def render_table(profile: Profile, top: int = TOP_ROWS) -> str:
    """The profile as a few header lines and a table of its `top` kernels, the rest summed in one line."""
    lines = [_title(profile), _totals(profile)]
    if profile.roofline is not None:
        lines.extend(_roofline_lines(profile.roofline))
    kind = profile.row_kind
    lines.append(f"{'share':>6} {'mean us':>9} {'per call':>8}  {kind}")
    for row in profile.rows[:top]:
        lines.append(f"{row.share:6.1%} {row.mean_us:9.1f} {row.calls / profile.calls:8.1f}  {short_name(row.name)}")
    rest = profile.rows[top:]
    if rest:
        share = sum(row.share for row in rest)
        per_call = sum(row.calls for row in rest) / profile.calls
        lines.append(f"{share:6.1%} {'':>9} {per_call:8.1f}  ({len(rest)} more {kind}s)")
    return "\n".join(lines)


def _title(profile: Profile) -> str:
    return f"Profile: {profile.platform} ({profile.device}), {profile.source}, {profile.calls} calls"


def _totals(profile: Profile) -> str:
    parts = []
    if profile.wall_time_us_per_call:
        parts.append(f"wall {format_seconds(profile.wall_time_us_per_call / 1e6)}/call")
        busy = profile.device_time_us_per_call / profile.wall_time_us_per_call
        # Above 100% only when the profiler's own overhead outweighs the gaps between kernels: no signal.
        share = f" ({busy:.0%} of wall)" if busy <= 1 else ""
        parts.append(f"{profile.row_kind}s {format_seconds(profile.device_time_us_per_call / 1e6)}/call{share}")
    else:
        parts.append(f"{profile.row_kind}s {format_seconds(profile.device_time_us_per_call / 1e6)}/call")
    parts.append(f"{profile.launches_per_call:g} launches/call")
    return " | ".join(parts)


def _roofline_lines(roofline: Roofline) -> list[str]:
    method = "" if roofline.flops_method == "flop_counter" else ", elementwise count"
    first = (f"Roofline: {format_quantity(roofline.flops_per_call, 'FLOP')}{method}, "
             f"{format_quantity(roofline.min_bytes_per_call, 'B')} min traffic, "
             f"{roofline.arithmetic_intensity:.3g} FLOP/B (ridge {roofline.ridge_intensity:.3g}) -> "
             f"{roofline.bound}-bound")
    if roofline.bound == "memory":
        achieved = f"{format_quantity(roofline.achieved_bytes_per_s, 'B/s')} of " \
                   f"{format_quantity(roofline.peak_bytes_per_s, 'B/s')} measured peak"
    else:
        achieved = f"{format_quantity(roofline.achieved_flops_per_s, 'FLOP/s')} of " \
                   f"{format_quantity(roofline.peak_flops_per_s, 'FLOP/s')} measured peak"
    second = f"  at {format_seconds(roofline.time_us_per_call / 1e6)}/call: {achieved} = " \
             f"{roofline.fraction_of_bound:.1%} of the bound"
    if roofline.fraction_of_bound > 1:
        second += " (above 1: the data stayed in cache)"
    return [first, second]


def format_quantity(value: float, unit: str) -> str:
    """1.23e9, 'FLOP/s' -> '1.23 GFLOP/s'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_seconds(seconds: float) -> str:
    """0.000123 -> '123 us'."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
