"""torch.profiler on a CUDA device: the rows are the kernels that ran, whoever launched them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from kforge.platforms import PlatformError, get_platform
from kforge.platforms.base import Platform
from kforge.profiling.collect import profile_callable
from kforge.profiling.peaks import PeakPlan, measure_peaks

pytestmark = pytest.mark.gpu


class _CudaForTests(Platform):
    """Stands in where kforge has no CUDA platform registered: events for timing, no cache flush."""

    name = "cuda"
    languages = ("cuda",)

    @classmethod
    def is_available(cls) -> bool:
        return torch.cuda.is_available()

    @property
    def device(self) -> torch.device:
        return torch.device("cuda")

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        result = call()
        end.record()
        end.synchronize()
        return result, int(start.elapsed_time(end) * 1e6)

    def flush_cache(self) -> None:
        pass

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "device": torch.cuda.get_device_name()}


@pytest.fixture(scope="module")
def cuda() -> Platform:
    try:
        return get_platform("cuda")
    except PlatformError:
        return _CudaForTests()


def _inputs(seed: int) -> list[Any]:
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(256, 512, device="cuda", generator=generator)]


def test_rows_are_the_device_kernels_of_each_call(cuda: Platform) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU()).cuda()
    with torch.no_grad():
        profile = profile_callable(lambda inputs: model(*inputs), _inputs, cuda, calls=4)
    assert profile.row_kind == "kernel"
    assert profile.device == torch.cuda.get_device_name()
    assert profile.launches_per_call >= 2  # the GEMM and the GELU; input generation is not counted
    assert all(row.calls % profile.calls == 0 for row in profile.rows)
    assert sum(row.share for row in profile.rows) == pytest.approx(1.0)
    assert 0 < profile.device_time_us_per_call <= profile.wall_time_us_per_call  # type: ignore[operator]
    assert any("gelu" in row.name.lower() for row in profile.rows)


def test_a_triton_kernel_launched_outside_any_operator_is_a_row(cuda: Platform) -> None:
    triton = pytest.importorskip("triton")
    language = pytest.importorskip("triton.language")

    @triton.jit
    def double_kernel(x_ptr, y_ptr, n, block: language.constexpr):  # type: ignore[no-untyped-def]
        offsets = language.program_id(0) * block + language.arange(0, block)
        mask = offsets < n
        language.store(y_ptr + offsets, language.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

    def forward(inputs: list[Any]) -> torch.Tensor:
        x = inputs[0]
        y = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), block=1024)
        return y

    with torch.no_grad():
        profile = profile_callable(forward, _inputs, cuda, calls=3)
    assert [row.name for row in profile.rows] == ["double_kernel"]
    assert profile.launches_per_call == 1


def test_peaks_of_the_device(cuda: Platform, tmp_path: Any) -> None:
    plan = PeakPlan(copy_bytes=64 << 20, matmul_min_n=1024, matmul_max_n=2048, repeats=3)
    peaks = measure_peaks(cuda, cache_dir=tmp_path, plan=plan)
    assert peaks.bytes_per_s > 1e11
    assert peaks.flops_per_s > 1e12
