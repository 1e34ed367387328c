from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kforge.platforms.cpu import CpuPlatform
from kforge.profiling.peaks import PeakPlan, measure_peaks

# Small enough to take milliseconds; the measurement is the same at any size.
TINY = PeakPlan(copy_bytes=1 << 20, matmul_min_n=32, matmul_max_n=64, matmul_target_ms=1000.0, repeats=2)


class CountingCpu(CpuPlatform):
    """The CPU platform, counting the calls it times."""

    def __init__(self) -> None:
        super().__init__()
        self.timed = 0

    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        self.timed += 1
        return super().time_call(call)


def test_peaks_are_measured_once_then_read_from_the_cache(tmp_path: Path) -> None:
    platform = CountingCpu()
    first = measure_peaks(platform, cache_dir=tmp_path, plan=TINY)
    assert platform.timed > 0
    assert first.flops_per_s > 0 and first.bytes_per_s > 0
    assert first.matmul_n == 64  # doubled from 32 because one call took less than the target
    [cached] = (tmp_path / "peaks").glob("*.json")
    assert torch.__version__.split("+")[0] in cached.name

    platform.timed = 0
    again = measure_peaks(platform, cache_dir=tmp_path, plan=TINY)
    assert platform.timed == 0
    assert again == first


def test_each_dtype_has_its_own_entry(tmp_path: Path) -> None:
    platform = CpuPlatform()
    single = measure_peaks(platform, cache_dir=tmp_path, plan=TINY)
    double = measure_peaks(platform, dtype=torch.float64, cache_dir=tmp_path, plan=TINY)
    assert (single.dtype, double.dtype) == ("float32", "float64")
    assert len(list((tmp_path / "peaks").glob("*.json"))) == 2


def test_an_unreadable_cache_file_is_measured_again(tmp_path: Path) -> None:
    platform = CountingCpu()
    measure_peaks(platform, cache_dir=tmp_path, plan=TINY)
    [cached] = (tmp_path / "peaks").glob("*.json")
    cached.write_text("{not json")
    platform.timed = 0
    measure_peaks(platform, cache_dir=tmp_path, plan=TINY)
    assert platform.timed > 0
    assert cached.read_text().startswith("{\n")
