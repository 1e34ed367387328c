"""The Intel XPU and Apple MPS platforms on a simulated device, so CI exercises their timing without the GPU.

The simulation (the CUDA platform tests' device) replaces the primitives each platform captured at import:
events, their record and elapsed time, the device-wide synchronize and the clock. The real `time_call`,
`audit_timing`, `device_lost` and flush sizing run on top.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import kforge.platforms.events as events_module
import kforge.platforms.mps as mps_module
import kforge.platforms.xpu as xpu_module
from kforge.platforms.events import EventTimedPlatform
from kforge.platforms.mps import MpsPlatform, can_compile_metal
from kforge.platforms.xpu import XpuPlatform, aot_target, last_level_cache_bytes, supports_sycl
from tests.platforms.test_cuda_platform import LAUNCH_NS, US, SimulatedDevice

MIB = 1024 * 1024


def simulate(monkeypatch: pytest.MonkeyPatch, module: Any) -> SimulatedDevice:
    simulated = SimulatedDevice()
    monkeypatch.setattr(events_module, "_clock", simulated.clock)
    monkeypatch.setattr(module, "_Event", simulated.make_event)
    monkeypatch.setattr(module, "_record", simulated.record)
    monkeypatch.setattr(module, "_elapsed_time", simulated.elapsed_ms)
    monkeypatch.setattr(module, "_synchronize", simulated.synchronize)
    if hasattr(module, "_current_stream"):
        monkeypatch.setattr(module, "_current_stream", lambda device=None: "stream")
    return simulated


@pytest.fixture(params=[(XpuPlatform, xpu_module), (MpsPlatform, mps_module)], ids=["xpu", "mps"])
def simulated(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
              ) -> tuple[EventTimedPlatform, SimulatedDevice]:
    platform_class, module = request.param
    return platform_class(), simulate(monkeypatch, module)


def timed_calls(platform: EventTimedPlatform, call: Callable[[], Any], count: int = 30) -> list[int]:
    times = []
    for _ in range(count):
        platform.synchronize()
        _, elapsed = platform.time_call(call)
        times.append(elapsed)
    return times


def test_events_time_a_kernel_with_its_launch(simulated: tuple[EventTimedPlatform, SimulatedDevice]) -> None:
    platform, device = simulated
    times = timed_calls(platform, lambda: device.launch(400 * US))
    # No hold on these devices: the events open as soon as they are recorded, so the launch counts too.
    assert all(400 * US <= t <= 400 * US + LAUNCH_NS for t in times), times
    assert platform.host_bound() is False
    assert platform.audit_timing(times) is None


def test_a_call_costs_its_issue_time_when_the_host_is_slower(
        simulated: tuple[EventTimedPlatform, SimulatedDevice]) -> None:
    platform, device = simulated
    times = timed_calls(platform, lambda: (device.spend(300 * US), device.launch(5 * US)))
    assert platform.host_bound() is True
    assert all(300 * US + LAUNCH_NS <= t <= 300 * US + LAUNCH_NS + 10 * US for t in times), times


def test_work_the_timed_stream_never_waited_for_is_flagged(
        simulated: tuple[EventTimedPlatform, SimulatedDevice]) -> None:
    platform, device = simulated
    times = timed_calls(platform, lambda: device.launch(400 * US, side_stream=True))
    assert max(times) < 20 * US
    doubt = platform.audit_timing(times)
    assert doubt is not None and doubt.rule == "dynamic.side-stream"


def test_figures_not_the_platforms_own_are_flagged(simulated: tuple[EventTimedPlatform, SimulatedDevice]) -> None:
    platform, device = simulated
    times = timed_calls(platform, lambda: device.launch(40 * US))
    doubt = platform.audit_timing([t // 10 for t in times])
    assert doubt is not None and doubt.rule == "dynamic.clock"


def test_a_lost_device_is_named_by_the_driver_or_by_the_probe(
        simulated: tuple[EventTimedPlatform, SimulatedDevice], monkeypatch: pytest.MonkeyPatch) -> None:
    platform, _ = simulated
    marker = platform.sticky_errors[0]
    try:
        try:
            raise RuntimeError(f"native failure: {marker.upper()} (code 20)")
        except RuntimeError as inner:
            raise ValueError("forward failed") from inner
    except ValueError as outer:
        reason = platform.device_lost(outer)
    assert reason is not None and marker in reason.lower()
    assert platform.device_lost(ValueError("shapes do not match")) is None  # the probe synchronize passed

    def broken() -> None:
        raise RuntimeError("the queue is gone")

    monkeypatch.setattr(platform, "synchronize", broken)
    assert platform.device_lost(ValueError("anything")) == "RuntimeError: the queue is gone"


def test_xpu_platform_shape_and_build_target() -> None:
    platform = XpuPlatform()
    assert platform.device == torch.device("xpu", 0)
    assert platform.asynchronous and not platform.limit_address_space
    assert platform.languages[0] == "triton"
    assert ("sycl" in platform.languages) == supports_sycl(torch.__version__)
    assert aot_target("Intel(R) Data Center GPU Max 1550") == "pvc"
    assert aot_target("Intel(R) Arc(TM) B580 Graphics") == "bmg"
    assert aot_target("Intel(R) Arc(TM) A770 Graphics") == "dg2"
    assert aot_target("Intel(R) Graphics [0x7d55]") is None  # builds for torch's own list


def test_sycl_is_offered_from_the_torch_that_added_sycl_sources() -> None:
    assert supports_sycl("2.7.0+xpu") and supports_sycl("2.13.0") and supports_sycl("3.0")
    assert not supports_sycl("2.6.0+xpu") and not supports_sycl("2.4.1") and not supports_sycl("nightly")
    from torch.utils.cpp_extension import load_inline  # this torch agrees with its version

    assert ("sycl_sources" in inspect.signature(load_inline).parameters) == supports_sycl(torch.__version__)


def test_xpu_flush_is_twice_the_reported_last_level_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    max1550 = SimpleNamespace(name="Intel(R) Data Center GPU Max 1550", last_level_cache_size=408 * MIB)
    monkeypatch.setattr(torch.xpu, "get_device_properties", lambda index=None: max1550)
    assert XpuPlatform().flush_bytes() == 816 * MIB
    assert XpuPlatform().worker_environment() == {"TORCH_XPU_ARCH_LIST": "pvc"}
    assert last_level_cache_bytes(SimpleNamespace()) == xpu_module.DEFAULT_LAST_LEVEL_CACHE_BYTES
    assert xpu_module.flush_bytes(4 * MIB) == 64 * MIB  # small caches still get a useful flush


def test_mps_flush_is_sized_for_unified_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mps_module.flush_bytes(96 * 1024 * MIB) == 256 * MIB  # larger than any reported system cache
    assert mps_module.flush_bytes(2 * 1024 * MIB) == 128 * MIB  # a sixteenth of a small machine's budget
    assert mps_module.flush_bytes(256 * MIB) == 64 * MIB
    monkeypatch.setattr(torch.mps, "recommended_max_memory", lambda: 16 * 1024 * MIB)
    assert MpsPlatform().flush_bytes() == 256 * MIB


def test_mps_needs_a_torch_that_compiles_metal() -> None:
    assert can_compile_metal(SimpleNamespace(compile_shader=lambda source: None))
    assert not can_compile_metal(SimpleNamespace())
    platform = MpsPlatform()
    assert platform.languages == ("metal",) and platform.device == torch.device("mps")


def test_the_reserve_is_poisoned_within_what_the_device_has_free(monkeypatch: pytest.MonkeyPatch) -> None:
    platform = XpuPlatform()
    filled: list[tuple[int, int]] = []

    def fake_empty(size: int, dtype: torch.dtype, device: torch.device) -> Any:
        return SimpleNamespace(fill_=lambda value: filled.append((size, value)))

    monkeypatch.setattr(events_module, "_empty", fake_empty)
    monkeypatch.setattr(platform, "synchronize", lambda: None)
    monkeypatch.setattr(platform, "free_bytes", lambda: 400 * MIB)
    platform.poison_free_memory(512 * MIB)
    platform.poison_free_memory(16 * MIB)
    assert filled == [(100 * MIB, 0xFF), (16 * MIB, 0xFF)]
