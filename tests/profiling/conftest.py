"""Shared profiling fixtures: a small model on the CPU platform, profiled once per session.

The first torch.profiler session in a process costs a few seconds of start-up; every test that only
reads a profile shares this one.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from kforge.platforms.cpu import CpuPlatform
from kforge.profiling.collect import profile_callable
from kforge.profiling.schema import Peaks, Profile, Workload


class SmallModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * 2


def small_inputs(seed: int) -> list[Any]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(8, 32, generator=generator)]


@pytest.fixture(scope="session")
def cpu_profile() -> Profile:
    model = SmallModel().eval()
    with torch.no_grad():
        return profile_callable(lambda inputs: model(*inputs), small_inputs, CpuPlatform(), calls=3, warmup=1)


@pytest.fixture
def peaks() -> Peaks:
    return Peaks(device="test device", torch_version=torch.__version__, dtype="float32", flops_per_s=1e12,
                 bytes_per_s=1e11, matmul_n=4096, copy_bytes=1 << 28)


@pytest.fixture
def workload() -> Workload:
    return Workload(flops=2e9, flops_method="flop_counter", min_bytes=4 * 10**7, dtype="float32")
