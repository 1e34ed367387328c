from __future__ import annotations

import pytest

from kforge.profiling.roofline import roofline, with_roofline
from kforge.profiling.schema import Peaks, Profile, Workload


def test_low_intensity_is_memory_bound_and_judged_by_bandwidth(peaks: Peaks) -> None:
    # 1e6 FLOPs over 1e8 bytes: 0.01 FLOP/B, far below the ridge of 10 FLOP/B.
    work = Workload(flops=1e6, flops_method="elementwise", min_bytes=10**8, dtype="float32")
    result = roofline(work, time_us_per_call=2000.0, peaks=peaks)
    assert result.bound == "memory"
    assert result.achieved_bytes_per_s == pytest.approx(5e10)
    assert result.fraction_of_bound == pytest.approx(0.5)
    assert result.ridge_intensity == pytest.approx(10.0)


def test_high_intensity_is_compute_bound_and_judged_by_flops(peaks: Peaks) -> None:
    work = Workload(flops=1e12, flops_method="flop_counter", min_bytes=10**6, dtype="float32")
    result = roofline(work, time_us_per_call=4e6, peaks=peaks)
    assert result.bound == "compute"
    assert result.fraction_of_bound == pytest.approx(0.25)


def test_no_flops_is_memory_bound(peaks: Peaks) -> None:
    work = Workload(flops=0, flops_method="elementwise", min_bytes=10**8, dtype="float32")
    assert roofline(work, 1000.0, peaks).bound == "memory"


def test_with_roofline_uses_the_wall_time_unless_told(cpu_profile: Profile, workload: Workload,
                                                       peaks: Peaks) -> None:
    assert with_roofline(cpu_profile, workload, peaks).roofline.time_us_per_call == \
        cpu_profile.wall_time_us_per_call  # type: ignore[union-attr]
    assert with_roofline(cpu_profile, workload, peaks, 123.0).roofline.time_us_per_call == 123.0  # type: ignore[union-attr]


def test_zero_time_is_an_error(workload: Workload, peaks: Peaks) -> None:
    with pytest.raises(ValueError):
        roofline(workload, 0.0, peaks)
