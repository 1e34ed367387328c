"""CudaPlatform's timing path and plumbing on a simulated device, so CI exercises them without a GPU.

The simulation replaces the device primitives the platform captured at import (clock, events,
synchronize, the hold that fills the device before a call): a candidate call launches work either on the
timed stream or on a side stream that the timed stream never waits for, and the real `time_call` and
`audit_timing` run on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import torch

import kforge.platforms.cuda as cuda_module
from kforge.platforms import PlatformError, get_platform
from kforge.platforms.cuda import CudaPlatform

US = 1000
LAUNCH_NS = 6 * US  # host time to launch a kernel
EVENT_LAG_NS = 2 * US  # from recording an event to the device executing it when idle
SYNC_NS = 5 * US  # from the device going idle to synchronize returning


@dataclass
class Event:
    at_ns: int = 0


@dataclass
class SimulatedDevice:
    now: int = 0
    timed_busy_until: int = 0
    side_busy_until: int = 0
    held_until: int = 0  # nothing on any stream starts before this
    holds: list[int] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def clock(self) -> int:
        return self.now

    def make_event(self, enable_timing: bool = False) -> Event:
        return Event()

    def record(self, event: Event, stream: Any = None) -> None:
        event.at_ns = max(self.now + EVENT_LAG_NS, self.timed_busy_until)
        self.timed_busy_until = event.at_ns

    def synchronize(self, device: Any = None) -> None:
        self.now = max(self.now, self.timed_busy_until, self.side_busy_until) + SYNC_NS

    def elapsed_ms(self, start: Event, end: Event) -> float:
        return (end.at_ns - start.at_ns) / 1e6

    def hold(self, device: int, duration_ns: int) -> None:
        self.now += LAUNCH_NS
        self.holds.append(duration_ns)
        self.held_until = max(self.now, self.timed_busy_until, self.side_busy_until) + duration_ns
        self.timed_busy_until = self.held_until

    def spend(self, host_ns: int) -> None:
        self.now += host_ns

    def launch(self, duration_ns: int, side_stream: bool = False) -> None:
        self.now += LAUNCH_NS
        if side_stream:
            self.side_busy_until = max(self.now, self.side_busy_until, self.held_until) + duration_ns
        else:
            self.timed_busy_until = max(self.now, self.timed_busy_until) + duration_ns


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> SimulatedDevice:
    simulated = SimulatedDevice()
    monkeypatch.setattr(cuda_module, "_clock", simulated.clock)
    monkeypatch.setattr(cuda_module, "_Event", simulated.make_event)
    monkeypatch.setattr(cuda_module, "_record", simulated.record)
    monkeypatch.setattr(cuda_module, "_elapsed_time", simulated.elapsed_ms)
    monkeypatch.setattr(cuda_module, "_synchronize", simulated.synchronize)
    monkeypatch.setattr(cuda_module, "_current_stream", lambda device=None: "stream")
    monkeypatch.setattr(cuda_module, "_hold", simulated.hold)
    return simulated


def timed_calls(platform: CudaPlatform, call: Any, count: int = 30) -> list[int]:
    times = []
    for _ in range(count):
        platform.synchronize()
        _, elapsed = platform.time_call(call)
        times.append(elapsed)
    return times


def test_events_time_the_kernel_on_the_callers_stream(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    times = timed_calls(platform, lambda: device.launch(40 * US))
    # The hold covered the launch, so the events saw the kernel alone: no launch or event lag in the figure.
    assert times == [40 * US] * len(times), times
    assert platform.audit_timing(times) is None


def test_a_call_costs_its_issue_time_when_the_host_is_the_slower(device: SimulatedDevice) -> None:
    platform = CudaPlatform()

    def slow_to_issue() -> None:
        device.spend(300 * US)  # Python around the launch
        device.launch(5 * US)

    times = timed_calls(platform, slow_to_issue)
    assert platform.host_bound() is True  # the verdict can say that the runtime is the host's
    assert all(t == 300 * US + LAUNCH_NS for t in times), times
    assert platform.audit_timing(times) is None
    timed_calls(platform, lambda: device.launch(400 * US), count=2)
    assert platform.host_bound() is False


def test_the_hold_outlasts_the_hosts_latest_issue_times(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    timed_calls(platform, lambda: (device.spend(400 * US), device.launch(5 * US)), count=3)
    issue = 400 * US + LAUNCH_NS
    assert device.holds[0] < issue < device.holds[1] == device.holds[2]
    device.holds.clear()
    timed_calls(platform, lambda: device.launch(5 * US), count=12)
    assert device.holds[-1] < 50 * US  # the long issue times have left the window


def test_work_on_a_side_stream_waits_for_the_hold_and_is_flagged(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    times = timed_calls(platform, lambda: device.launch(40 * US, side_stream=True))
    assert max(times) < 10 * US  # the caller's stream saw only the launch
    doubt = platform.audit_timing(times)
    assert doubt is not None and doubt.rule == "dynamic.side-stream", doubt


def test_figures_that_are_not_the_platforms_own_are_flagged(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    times = timed_calls(platform, lambda: device.launch(40 * US))
    doubt = platform.audit_timing([t // 10 for t in times])
    assert doubt is not None and doubt.rule == "dynamic.clock"


def test_only_the_last_calls_are_audited(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    timed_calls(platform, lambda: device.launch(40 * US, side_stream=True), count=5)  # warm-up, say
    times = timed_calls(platform, lambda: device.launch(40 * US))
    assert platform.audit_timing(times) is None


def test_worker_builds_for_the_devices_own_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert CudaPlatform().worker_environment() == {"TORCH_CUDA_ARCH_LIST": "9.0"}


def test_cuda_platform_shape() -> None:
    platform = CudaPlatform()
    assert platform.languages == ("cuda", "triton")
    assert platform.asynchronous and not platform.limit_address_space
    assert platform.device == torch.device("cuda", 0)
    assert platform.untimed_reason("cuda") is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour on machines without a GPU")
def test_without_a_gpu_auto_picks_the_cpu_and_cuda_is_refused() -> None:
    assert get_platform("auto").name == "cpu"
    with pytest.raises(PlatformError, match="not available"):
        get_platform("cuda")


def test_lost_context_is_recognised_from_the_error_chain(device: SimulatedDevice) -> None:
    platform = CudaPlatform()
    try:
        try:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        except RuntimeError as inner:
            raise ValueError("forward failed") from inner
    except ValueError as outer:
        reason = platform.device_lost(outer)
    assert reason is not None and "illegal memory access" in reason
    assert platform.device_lost(ValueError("shapes do not match")) is None  # and the probe synchronize passed
