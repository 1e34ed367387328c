"""The new platforms' primitives on their real device: events, synchronize, flush, poison, the audit, the facts.

Each test is marked with its platform (mps, xpu, rocm) and skipped where that device is absent, which is every
machine these tests have run on so far: docs/platforms.md says how to run them where the device is.
"""

from __future__ import annotations

import pytest
import torch

from kforge.platforms import get_platform
from kforge.platforms.base import Platform

NEW = [pytest.param(name, marks=getattr(pytest.mark, name), id=name) for name in ("mps", "xpu", "rocm")]
SIZE = 1 << 22


@pytest.fixture
def platform(request: pytest.FixtureRequest) -> Platform:
    return get_platform(request.param)


def timed(platform: Platform, call: object, count: int = 20) -> list[int]:
    times = []
    for _ in range(count):
        platform.synchronize()
        _, elapsed = platform.time_call(call)  # type: ignore[arg-type]
        times.append(elapsed)
    return times


@pytest.mark.parametrize("platform", NEW, indirect=True)
def test_a_kernel_is_timed_by_the_devices_events_and_passes_the_audit(platform: Platform) -> None:
    x = torch.randn(SIZE, device=platform.device)
    small = timed(platform, lambda: x * 2.0)
    large = timed(platform, lambda: [x * 2.0 for _ in range(20)])
    assert min(small) > 0 and sorted(large)[10] > sorted(small)[10]
    assert platform.audit_timing(large) is None
    assert platform.audit_timing([t // 10 for t in large]) is not None  # figures not the platform's own


@pytest.mark.parametrize("platform", NEW, indirect=True)
def test_the_flush_runs_on_the_device_and_the_facts_name_it(platform: Platform) -> None:
    platform.flush_cache()
    platform.synchronize()
    facts = platform.describe()
    assert facts["platform"] == platform.name and facts.get("device")


@pytest.mark.parametrize("platform", NEW, indirect=True)
def test_memory_freed_after_poisoning_comes_back_poisoned(platform: Platform) -> None:
    platform.poison_free_memory(SIZE)
    reused = torch.empty(SIZE, dtype=torch.uint8, device=platform.device)
    platform.synchronize()
    assert int((reused.cpu() == 0xFF).sum()) > SIZE // 2


@pytest.mark.parametrize("platform", NEW, indirect=True)
def test_a_healthy_device_is_not_reported_lost(platform: Platform) -> None:
    assert platform.device_lost(ValueError("shapes do not match")) is None
