"""Shared fixtures: where the test problems and candidates live, and fast evaluation settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.platforms import platform_class
from kforge.verify.evaluate import EvalOptions, TimingSettings
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool

TESTS = Path(__file__).parent
PROBLEMS = TESTS / "problems"
CANDIDATES = TESTS / "candidates"
EXAMPLES = TESTS.parent / "examples"

# Short timing so the suite stays quick on two cores; the protocol is the same as the default.
FAST_TIMING = TimingSettings(warmup_ms=20, rep_ms=100, min_reps=5, max_reps=60, rotate=2, max_rounds=3)


def fast_options(**changes: object) -> EvalOptions:
    base = {"platform": "cpu", "trials": 2, "baselines": (), "timing": FAST_TIMING, "timeout_s": 60.0}
    base.update(changes)
    return EvalOptions(**base)  # type: ignore[arg-type]


def kernel_count(source: str) -> int:
    """The Triton kernels a generated solution defines, not counting the layout copy every one may carry."""
    return source.count("@triton.jit") - source.count("def _copy_kernel(")


POLICY_OFF = Policy(static_checks=False, dynamic_checks=False)
STATIC_OFF = Policy(static_checks=False)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    """Workers started ahead, so each evaluation skips Python's and torch's start-up (never reused)."""
    with WorkerPool(spares=1) as workers:
        yield workers


# Markers of tests that need a device: the platform each asks for, and the device in words. `gpu` is an NVIDIA
# GPU (the cuda platform): torch built for ROCm answers torch.cuda too, but runs the rocm platform's tests.
DEVICE_MARKERS = {"gpu": ("cuda", "a CUDA GPU"), "mps": ("mps", "an Apple GPU (MPS)"),
                  "xpu": ("xpu", "an Intel GPU (XPU)"), "rocm": ("rocm", "an AMD GPU with torch for ROCm")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, (platform, device) in DEVICE_MARKERS.items():
        if platform_class(platform).is_available():
            continue
        skip = pytest.mark.skip(reason=f"needs {device}")
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)
