"""The ROCm platform without an AMD GPU: what it reads off a device, what it builds for, how it is chosen, and
that the CUDA defences it inherits run on a simulated device without the NVIDIA-only hold."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kforge.platforms import PlatformError, get_platform
from kforge.platforms.cuda import CudaPlatform
from kforge.platforms.rocm import (
    RocmPlatform,
    build_environment,
    gfx_arch,
    infinity_cache_bytes,
    rocm_flush_bytes,
)
from tests.platforms.test_cuda_platform import US, SimulatedDevice, device, timed_calls  # noqa: F401

MIB = 1024 * 1024
MI300X = SimpleNamespace(name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-", L2_cache_size=4 * MIB,
                         warp_size=64, major=9, minor=4, multi_processor_count=304, total_memory=192 * 1024 * MIB)


def test_architecture_comes_without_its_feature_flags() -> None:
    assert gfx_arch("gfx942:sramecc+:xnack-") == "gfx942"
    assert gfx_arch("gfx90a") == "gfx90a"
    assert build_environment("gfx90a:sramecc+:xnack-") == {"PYTORCH_ROCM_ARCH": "gfx90a"}


def test_flush_covers_the_l2_and_the_infinity_cache() -> None:
    assert rocm_flush_bytes(4 * MIB, "gfx942") == 2 * (4 + 256) * MIB  # MI300X: 256 MB of Infinity Cache
    assert rocm_flush_bytes(8 * MIB, "gfx90a") == 64 * MIB  # MI250X has none: the usual floor
    assert infinity_cache_bytes("gfx9999") == 256 * MIB  # an unknown architecture is flushed generously


def test_the_device_decides_flush_and_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=None: MI300X)
    platform = RocmPlatform()
    assert platform.flush_size() == 520 * MIB
    assert platform.worker_environment() == {"PYTORCH_ROCM_ARCH": "gfx942"}


def test_rocm_platform_shape() -> None:
    platform = RocmPlatform()
    assert platform.languages == ("hip", "triton")
    assert platform.device == torch.device("cuda", 0)  # torch for ROCm keeps the cuda device type
    assert platform.asynchronous and not platform.limit_address_space and not platform.uses_hold


def test_torch_for_rocm_selects_rocm_not_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", "6.2.41133")
    assert not CudaPlatform.is_available() and RocmPlatform.is_available()
    assert get_platform("auto").name == "rocm"
    with pytest.raises(PlatformError, match="'cuda' is not available"):
        get_platform("cuda")
    monkeypatch.setattr(torch.version, "hip", None)
    assert CudaPlatform.is_available() and not RocmPlatform.is_available()


def test_timing_runs_without_the_hold_and_keeps_the_audit(device: SimulatedDevice) -> None:  # noqa: F811
    platform = RocmPlatform()
    times = timed_calls(platform, lambda: device.launch(400 * US))
    assert device.holds == [] and platform.lead_in_ns() == 0
    assert all(t >= 400 * US for t in times) and platform.audit_timing(times) is None
    assert platform.host_bound() is False
    timed_calls(platform, lambda: (device.spend(300 * US), device.launch(5 * US)), count=3)
    assert platform.host_bound() is True  # the events saw mostly the host issuing the call
    hidden = timed_calls(platform, lambda: device.launch(400 * US, side_stream=True))
    doubt = platform.audit_timing(hidden)
    assert doubt is not None and doubt.rule == "dynamic.side-stream"


def test_hip_errors_that_lose_the_device_are_recognised(device: SimulatedDevice) -> None:  # noqa: F811
    platform = RocmPlatform()
    lost = platform.device_lost(RuntimeError("Memory access fault by GPU node-2 (Agent handle: 0x5d3) on address "
                                             "0x7f. Reason: Page not present or supervisor privilege."))
    assert lost is not None and "Memory access fault by GPU node-2" in lost
    assert platform.device_lost(RuntimeError("HIP error: hipErrorIllegalAddress")) is not None
    assert platform.device_lost(ValueError("shapes do not match")) is None
