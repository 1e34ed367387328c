"""Documented device limits, refined by device name."""

from __future__ import annotations

from kforge.knowledge import DeviceLimits


def test_h200_has_hopper_limits() -> None:
    limits = DeviceLimits.defaults("cuda", "NVIDIA H200")
    assert limits.max_threads_per_block == 1024
    assert limits.max_shared_memory_per_block == 227 * 1024
    assert limits.max_static_shared_memory == 48 * 1024
    assert limits.max_num_warps == 32
    assert limits.multiprocessors == 132


def test_generic_cuda_leaves_the_opt_in_limit_unknown() -> None:
    limits = DeviceLimits.defaults("cuda")
    assert limits.max_threads_per_block == 1024
    assert limits.max_shared_memory_per_block is None


def test_device_names_match_the_right_entry() -> None:
    assert DeviceLimits.defaults("cuda", "NVIDIA A100-SXM4-80GB").max_shared_memory_per_block == 163 * 1024
    assert DeviceLimits.defaults("cuda", "NVIDIA A10").max_shared_memory_per_block == 99 * 1024


def test_other_platforms() -> None:
    assert DeviceLimits.defaults("mps").max_threadgroup_memory == 32 * 1024
    xpu = DeviceLimits.defaults("xpu", "Intel(R) Data Center GPU Max 1550")
    assert xpu.slm_size == 128 * 1024 and 16 in xpu.sub_group_sizes and "256" in xpu.grf_modes
    assert DeviceLimits.defaults("cpu").max_threads_per_block is None


def test_unknown_platform_has_no_limits() -> None:
    limits = DeviceLimits.defaults("tpu", "v5e")
    assert limits == DeviceLimits(platform="tpu", device_name="v5e")
