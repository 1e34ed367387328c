"""Profiles for the performance-analysis agent: where a forward call's time goes and how close it is to the roofline.

In the worker: `profile_callable` (torch.profiler on any platform). In the harness: `measure_workload` on
the reference, `measure_peaks` for the device (cached per machine), `with_roofline` to join them, then
`render_table` for text-only models or `render_chart` for models that read images.
"""

from kforge.profiling.chart import ChartUnavailable, render_chart
from kforge.profiling.collect import profile_callable
from kforge.profiling.ncu import ncu_command, ncu_path, parse_ncu_csv, profile_from_ncu
from kforge.profiling.peaks import PeakPlan, measure_peaks
from kforge.profiling.render import render_table
from kforge.profiling.roofline import roofline, with_roofline
from kforge.profiling.schema import KernelRow, Peaks, Profile, Roofline, Workload
from kforge.profiling.workload import measure_workload, min_bytes

__all__ = [
    "ChartUnavailable",
    "KernelRow",
    "PeakPlan",
    "Peaks",
    "Profile",
    "Roofline",
    "Workload",
    "measure_peaks",
    "measure_workload",
    "min_bytes",
    "ncu_command",
    "ncu_path",
    "parse_ncu_csv",
    "profile_callable",
    "profile_from_ncu",
    "render_chart",
    "render_table",
    "roofline",
    "with_roofline",
]
