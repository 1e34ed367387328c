"""The CUDA platform's decisions, checked without a GPU: architecture, cache flush size, context errors,
and the rule that tells work hidden on another stream from honest timing noise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kforge.platforms.cuda.device import (
    DEFAULT_L2_BYTES,
    HIDDEN_WORK_FLOOR_NS,
    MIN_FLUSH_BYTES,
    arch_flag,
    arch_list,
    context_error_line,
    flush_bytes,
    hidden_work,
    is_context_error,
    l2_cache_bytes,
)

MIB = 1024 * 1024
US = 1000


def test_l2_size_is_read_from_the_device_properties() -> None:
    assert l2_cache_bytes(SimpleNamespace(L2_cache_size=60 * MIB)) == 60 * MIB


@pytest.mark.parametrize("properties", [SimpleNamespace(), SimpleNamespace(L2_cache_size=0),
                                        SimpleNamespace(L2_cache_size=None), SimpleNamespace(L2_cache_size=True)])
def test_missing_or_meaningless_l2_size_falls_back_to_a_generous_default(properties: object) -> None:
    assert l2_cache_bytes(properties) == DEFAULT_L2_BYTES


def test_flush_buffer_is_twice_the_l2_and_never_tiny() -> None:
    assert flush_bytes(60 * MIB) == 120 * MIB
    assert flush_bytes(2 * MIB) == MIN_FLUSH_BYTES


@pytest.mark.parametrize(("capability", "listed", "flag"), [((9, 0), "9.0", "sm_90"), ((8, 6), "8.6", "sm_86"),
                                                             ((10, 0), "10.0", "sm_100")])
def test_builds_target_the_device_itself(capability: tuple[int, int], listed: str, flag: str) -> None:
    assert arch_list(capability) == listed
    assert arch_flag(capability) == flag


@pytest.mark.parametrize("message", [
    "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be reported",
    "torch.AcceleratorError: CUDA error: device-side assert triggered",
    "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
    "RuntimeError: CUDA error: unspecified launch failure",
    "RuntimeError: CUDA error: misaligned address",
])
def test_errors_that_break_the_context_are_recognised(message: str) -> None:
    assert is_context_error(message)
    line = context_error_line("forward failed:\n" + message)
    assert line is not None and "CUDA" in line


@pytest.mark.parametrize("message", [
    "RuntimeError: CUDA error: invalid configuration argument",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "ValueError: shapes do not match",
])
def test_recoverable_errors_are_not_mistaken_for_a_lost_context(message: str) -> None:
    assert not is_context_error(message)


def test_honest_timings_pass() -> None:
    # 40 us kernels; host time exceeds the events by the usual 12 us of launch and sync latency, +- 3 us.
    device = [40 * US + (i % 5) * 200 for i in range(50)]
    host = [d + 12 * US + ((i * 7) % 7 - 3) * US for i, d in enumerate(device)]
    assert hidden_work(device, host, overhead_ns=12 * US) is None


def test_work_on_an_unawaited_stream_is_caught() -> None:
    # The events see only a 9 us launch; the device stays busy 35 us longer.
    device = [9 * US] * 50
    host = [9 * US + 12 * US + 35 * US] * 50
    reason = hidden_work(device, host, overhead_ns=12 * US)
    assert reason is not None and "another stream" in reason


def test_small_surpluses_are_tolerated_in_proportion_to_the_call() -> None:
    # A 2 ms call with 300 us of unexplained host time is within a quarter of the call: tolerated.
    assert hidden_work([2000 * US] * 20, [2312 * US] * 20, overhead_ns=12 * US) is None
    # The same surplus on a 100 us call is not.
    assert hidden_work([100 * US] * 20, [412 * US] * 20, overhead_ns=12 * US) is not None


def test_a_surplus_below_the_floor_is_noise() -> None:
    surplus = HIDDEN_WORK_FLOOR_NS - 1 * US
    assert hidden_work([5 * US] * 20, [5 * US + 12 * US + surplus] * 20, overhead_ns=12 * US) is None


def test_a_few_outliers_do_not_decide() -> None:
    device = [40 * US] * 50
    host = [52 * US] * 45 + [5000 * US] * 5  # five calls hit by a page fault or a context switch
    assert hidden_work(device, host, overhead_ns=12 * US) is None


def test_no_timings_no_verdict() -> None:
    assert hidden_work([], [], overhead_ns=0) is None
    assert hidden_work([1, 2], [3], overhead_ns=0) is None
