"""Shared fixtures: where the test problems and candidates live, and fast evaluation settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kforge.verify.evaluate import EvalOptions, TimingSettings
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool

TESTS = Path(__file__).parent
PROBLEMS = TESTS / "problems"
CANDIDATES = TESTS / "candidates"
EXAMPLES = TESTS.parent / "examples"

# Short timing so the suite stays quick on two cores; the protocol is the same as the default.
FAST_TIMING = TimingSettings(warmup_ms=20, rep_ms=100, min_reps=5, max_reps=60, rotate=2)


def fast_options(**changes: object) -> EvalOptions:
    base = {"platform": "cpu", "trials": 2, "baselines": (), "timing": FAST_TIMING, "timeout_s": 60.0}
    base.update(changes)
    return EvalOptions(**base)  # type: ignore[arg-type]


POLICY_OFF = Policy(static_checks=False, dynamic_checks=False)
STATIC_OFF = Policy(static_checks=False)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    """Workers started ahead, so each evaluation skips Python's and torch's start-up (never reused)."""
    with WorkerPool(spares=1) as workers:
        yield workers


# Markers of tests that need a device, and what each needs; the platform markers ask the platform itself.
DEVICE_MARKERS = {"gpu": "a CUDA GPU", "mps": "an Apple GPU (MPS)", "xpu": "an Intel GPU (XPU)",
                  "rocm": "an AMD GPU with torch for ROCm"}


def _device_present(marker: str) -> bool:
    if marker == "gpu":
        return torch.cuda.is_available()
    from kforge.platforms import platform_class

    return platform_class(marker).is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker, device in DEVICE_MARKERS.items():
        if _device_present(marker):
            continue
        skip = pytest.mark.skip(reason=f"needs {device}")
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)
