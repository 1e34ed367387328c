"""The CUDA platform on a real GPU: honest CUDA C++ and Triton candidates pass, every GPU-specific trick is
rejected or seen through, and a candidate that breaks its CUDA context is contained.

Skipped without a GPU. On a GPU machine: `python -m pytest -m gpu tests/verify/test_cuda.py`, or
`benchmarks/gpu_suite.sh`, which first compiles the shared extensions in parallel.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from kforge.platforms import get_platform
from kforge.platforms.cuda import CudaPlatform
from kforge.platforms.cuda.device import is_context_error, l2_cache_bytes
from kforge.platforms.cuda.hold import hold_device
from kforge.verify.evaluate import TimingSettings, evaluate
from kforge.verify.policy import Policy
from kforge.verify.prebuild import Prebuilder
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Outcome, Verdict
from tests.conftest import CANDIDATES, EXAMPLES, PROBLEMS, STATIC_OFF, fast_options

pytestmark = pytest.mark.gpu

GPU_PROBLEM = PROBLEMS / "gpu_leaky_scale.py"
GPU = CANDIDATES / "gpu_leaky_scale"
# Twenty timed calls: drawing this problem's 67 MB of inputs on the CPU costs more than the kernels.
GPU_TIMING = TimingSettings(warmup_ms=0.01, rep_ms=0.01, min_reps=20, max_reps=20, rotate=2)


Judge = Callable[..., Verdict]


@pytest.fixture
def judge(pool: WorkerPool) -> Judge:
    def run(candidate: Path, policy: Policy | None = None, **changes: object) -> Verdict:
        options = fast_options(platform="cuda", timing=GPU_TIMING, **({"policy": policy} if policy else {}),
                               **changes)
        return evaluate(GPU_PROBLEM, candidate, options, pool=pool)

    return run


# ---- the platform ----------------------------------------------------------------------------------------
def test_auto_picks_cuda_and_builds_for_this_device() -> None:
    platform = get_platform("auto")
    assert platform.name == "cuda"
    major, minor = torch.cuda.get_device_capability()
    assert platform.worker_environment() == {"TORCH_CUDA_ARCH_LIST": f"{major}.{minor}"}
    facts = platform.describe()
    assert facts["capability"] == f"{major}.{minor}" and facts["device"]


def test_l2_size_is_read_off_the_device() -> None:
    properties = torch.cuda.get_device_properties(0)
    reported = getattr(properties, "L2_cache_size", None)
    if reported:
        assert l2_cache_bytes(properties) == reported


def test_poison_reaches_memory_a_freed_answer_lived_in() -> None:
    platform = CudaPlatform()
    # Small pool, large pool, and a block larger than anything cached before.
    for numel in (1000, 300_000, 16 << 20):
        answer = torch.full((numel,), 3.0, device="cuda")
        del answer
        platform.poison_free_memory(64 << 20)
        reused = torch.empty(numel, device="cuda")
        assert bool(torch.isnan(reused).all()), f"{numel} floats: unpoisoned memory handed out"
        del reused


def _timed(platform: CudaPlatform, call: Callable[[], object], count: int = 30) -> list[int]:
    times = []
    for _ in range(count):
        platform.flush_cache()
        platform.synchronize()
        times.append(platform.time_call(call)[1])
    return times


def test_honest_work_passes_the_host_clock_cross_check() -> None:
    platform = CudaPlatform()
    data = torch.randn(16 << 20, device="cuda")
    times = _timed(platform, lambda: data.mul_(1.0001))
    assert statistics.median(times) > 5_000  # 128 MB through memory
    assert platform.audit_timing(times) is None


def test_the_hold_keeps_kernels_of_every_stream_waiting() -> None:
    """A kernel queued on another stream while the hold runs starts only when the hold is over."""
    data = torch.randn(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    before, side_done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    before.record()
    hold_device(0, 2_000_000)
    with torch.cuda.stream(side):
        data.mul_(1.0001)
        side_done.record(side)
    torch.cuda.synchronize()
    assert before.elapsed_time(side_done) >= 1.9, "the side stream's kernel ran during the hold"


def test_a_small_kernel_is_timed_without_the_hosts_launch_gap() -> None:
    platform = CudaPlatform()
    data = torch.randn(1 << 16, device="cuda")
    times = _timed(platform, lambda: data.mul_(1.0001))
    records = platform.clock_records()[-len(times):]
    # Each figure is the device's time or the host's time to issue the call, whichever was longer; the span
    # from before the hold to the end event is far longer (it holds the hold).
    assert all(timed < window for timed, window, _ in records), records
    assert statistics.median(times) < 50_000, times
    assert platform.audit_timing(times) is None


def test_joined_side_stream_passes_the_host_clock_cross_check() -> None:
    platform = CudaPlatform()
    data = torch.randn(16 << 20, device="cuda")
    side = torch.cuda.Stream()

    def joined() -> None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            data.mul_(1.0001)
        torch.cuda.current_stream().wait_stream(side)

    assert platform.audit_timing(_timed(platform, joined)) is None


def test_work_on_an_unawaited_stream_is_flagged() -> None:
    platform = CudaPlatform()
    data = torch.randn(16 << 20, device="cuda")
    side = torch.cuda.Stream()

    def hidden() -> None:
        with torch.cuda.stream(side):
            for _ in range(4):
                data.mul_(1.0001)

    doubt = platform.audit_timing(_timed(platform, hidden))
    assert doubt is not None and doubt.rule == "dynamic.side-stream", doubt


# ---- honest candidates -----------------------------------------------------------------------------------
HONEST = [GPU / "cuda_honest.py", GPU / "cuda_vec4.py", GPU / "cuda_joined_stream.py", GPU / "triton_rows.py",
          CANDIDATES / "leaky_scale" / "triton_honest.py"]


@pytest.mark.parametrize("candidate", HONEST, ids=lambda path: path.stem)
def test_honest_candidates_pass(candidate: Path, judge: Judge) -> None:
    verdict = judge(candidate)
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason} [{verdict.rule}]"
    assert verdict.platform == "cuda" and verdict.runtime_ms is not None and verdict.runtime_ms > 0
    assert verdict.max_abs_error is not None and verdict.max_abs_error < 1e-5


EXAMPLE_SOLUTIONS = sorted(EXAMPLES.glob("*/solution_cuda.py")) + sorted(EXAMPLES.glob("*/solution_triton.py"))


@pytest.mark.parametrize("solution", EXAMPLE_SOLUTIONS, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_example_gpu_solutions_pass(solution: Path, pool: WorkerPool) -> None:
    # Speedups are the benchmarks' business (benchmarks/gpu_bench.py); here only the verdict counts.
    verdict = evaluate(solution.parent / "problem.py", solution, fast_options(platform="cuda"), pool=pool)
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason} [{verdict.rule}]"
    assert verdict.runtime_ms is not None and verdict.runtime_ms > 0


def test_prebuilt_extension_is_loaded_not_rebuilt(judge: Judge) -> None:
    # The build worker sees no GPU, yet keys and compiles exactly as the evaluation's worker does: whichever
    # of the two built the library first, the other finds it in the (shared) cache and only loads it.
    with Prebuilder(get_platform("cuda"), parallel=1) as builder:
        built = builder.submit(GPU / "cuda_honest.py").result()
    assert built.ok, built.message
    verdict = judge(GPU / "cuda_honest.py", measure=False)
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.build_s is not None and verdict.build_s < 15.0, "the evaluation recompiled the extension"


# ---- tricks ----------------------------------------------------------------------------------------------
def test_output_left_in_a_freed_buffer_is_poisoned(judge: Judge) -> None:
    verdict = judge(GPU / "uninitialized_output.py")
    assert verdict.verdict == Outcome.INCORRECT, verdict.reason
    assert "second call" in verdict.reason and "non-finite" in verdict.reason


def test_kernel_on_an_unawaited_side_stream_is_not_accepted(judge: Judge) -> None:
    # Caught in the correctness trials when the copy on the caller's stream races the kernel, else by the
    # host-clock cross-check of the timed calls.
    verdict = judge(GPU / "side_stream.py")
    assert verdict.verdict in {Outcome.REJECTED, Outcome.INCORRECT}, verdict.reason
    if verdict.verdict == Outcome.REJECTED:
        assert verdict.rule in {"dynamic.unsynchronized", "dynamic.side-stream"}, verdict.reason


def test_side_stream_only_while_timed_gains_nothing(judge: Judge) -> None:
    """Rejected by the host-clock audit, or timed at no less than the honest kernel: never a false win.

    The hold before each timed call fills the device, so work launched on a side stream cannot run before
    the start event: it runs inside the timed window (the second outcome) or after it (the first)."""
    verdict = judge(GPU / "side_stream_when_timed.py")
    if verdict.verdict == Outcome.REJECTED:
        assert verdict.rule == "dynamic.side-stream", verdict.reason
        return
    honest = judge(GPU / "cuda_honest.py")
    assert verdict.verdict == honest.verdict == Outcome.CORRECT, f"{verdict.reason} / {honest.reason}"
    assert verdict.runtime_ms is not None and honest.runtime_ms is not None
    assert verdict.runtime_ms >= 0.9 * honest.runtime_ms, (verdict.timing, honest.timing)


def test_launch_left_running_on_a_private_stream_is_caught(judge: Judge) -> None:
    verdict = judge(GPU / "unsynchronized_launch.py")
    assert verdict.verdict in {Outcome.REJECTED, Outcome.INCORRECT}, verdict.reason
    if verdict.verdict == Outcome.REJECTED:
        assert verdict.rule == "dynamic.unsynchronized", verdict.reason


def test_patched_event_timer_is_rejected(judge: Judge) -> None:
    verdict = judge(GPU / "patched_event_timer.py")
    assert (verdict.verdict, verdict.rule) == (Outcome.REJECTED, "static.monkeypatch"), verdict.reason
    verdict = judge(GPU / "patched_event_timer.py", STATIC_OFF)
    assert (verdict.verdict, verdict.rule) == (Outcome.REJECTED, "dynamic.tamper"), verdict.reason


@pytest.mark.parametrize("candidate", ["bf16_precision", "triton_bf16"])
def test_precision_dropped_past_the_tolerance_is_incorrect(candidate: str, judge: Judge) -> None:
    verdict = judge(GPU / f"{candidate}.py")
    assert verdict.verdict == Outcome.INCORRECT, verdict.reason
    assert "tolerance" in verdict.reason


@pytest.mark.parametrize("candidate", ["illegal_address", "device_assert", "triton_illegal_address"])
def test_broken_cuda_context_is_contained(candidate: str, judge: Judge) -> None:
    verdict = judge(GPU / f"{candidate}.py")
    assert verdict.verdict == Outcome.CRASHED, f"{verdict.verdict}: {verdict.reason}"
    assert is_context_error(verdict.reason), verdict.reason
    after = judge(GPU / "cuda_honest.py", measure=False)
    assert after.verdict == Outcome.CORRECT, f"the next evaluation was affected: {after.reason}"
