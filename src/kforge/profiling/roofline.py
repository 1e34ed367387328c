"""The roofline bound of one forward call, and how close a measured time comes to it.

A call with arithmetic intensity I (FLOPs per byte of minimum traffic) can go no faster than
max(FLOPs / peak FLOP/s, bytes / peak bytes/s). Below the ridge intensity (peak FLOP/s / peak bytes/s) the
memory term is the larger, so the call is memory-bound and the fraction achieved is achieved bytes/s over
peak bytes/s; above it the call is compute-bound and the fraction is achieved FLOP/s over peak FLOP/s.
"""

from __future__ import annotations

from kforge.profiling.schema import Peaks, Profile, Roofline, Workload


def roofline(workload: Workload, time_us_per_call: float, peaks: Peaks) -> Roofline:
    """The roofline block for a call of `workload` taking `time_us_per_call` on a device with `peaks`."""
    if time_us_per_call <= 0:
        raise ValueError("time per call must be positive")
    seconds = time_us_per_call / 1e6
    achieved_flops = workload.flops / seconds
    achieved_bytes = workload.min_bytes / seconds
    memory_s = workload.min_bytes / peaks.bytes_per_s
    compute_s = workload.flops / peaks.flops_per_s
    bound = "memory" if memory_s >= compute_s else "compute"
    fraction = achieved_bytes / peaks.bytes_per_s if bound == "memory" else achieved_flops / peaks.flops_per_s
    return Roofline(flops_per_call=workload.flops, flops_method=workload.flops_method,
                    min_bytes_per_call=workload.min_bytes, time_us_per_call=time_us_per_call,
                    achieved_flops_per_s=achieved_flops, achieved_bytes_per_s=achieved_bytes,
                    peak_flops_per_s=peaks.flops_per_s, peak_bytes_per_s=peaks.bytes_per_s,
                    bound=bound, fraction_of_bound=fraction)


def with_roofline(profile: Profile, workload: Workload, peaks: Peaks, time_us_per_call: float | None = None) -> Profile:
    """`profile` with its roofline block filled in.

    The time defaults to the profile's wall time per call (what the verdict judges: launch gaps and host
    overhead included), else its device time; pass the harness's own median runtime to use that instead.
    """
    time_us = time_us_per_call or profile.wall_time_us_per_call or profile.device_time_us_per_call
    return profile.model_copy(update={"roofline": roofline(workload, time_us, peaks)})
