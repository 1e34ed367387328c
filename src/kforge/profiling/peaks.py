"""What the device can sustain: a large copy's bandwidth and a large matmul's rate, measured once per machine.

Datasheet peaks overstate what any kernel reaches, so the roofline is drawn from measured ones: the best of
a few timed copies (bytes read plus bytes written) and matmuls on the platform's device. The result is cached
as a JSON file named by device, torch version and dtype, since neither changes between runs on one machine.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import ValidationError

from kforge.paths import cache_dir as default_cache_dir
from kforge.platforms.base import Platform
from kforge.profiling.schema import Peaks


@dataclass(frozen=True)
class PeakPlan:
    """How large and how often to measure. The matmul doubles from `matmul_min_n` until one call takes
    `matmul_target_ms` (so a small device is not kept busy for seconds) or reaches `matmul_max_n`."""

    copy_bytes: int = 256 * 1024 * 1024  # larger than the last-level cache of any current device
    matmul_min_n: int = 512
    matmul_max_n: int = 8192
    matmul_target_ms: float = 20.0
    repeats: int = 5


def device_name(platform: Platform) -> str:
    """The device's own name where the platform reports one, else the platform's name."""
    return platform.describe().get("device") or platform.name


def measure_peaks(platform: Platform, dtype: torch.dtype = torch.float32, cache_dir: Path | None = None,
                  plan: PeakPlan | None = None) -> Peaks:
    """The device's measured peaks for `dtype`, from the cache when this machine has measured them before."""
    path = _cache_path(platform, dtype, cache_dir)
    cached = _read(path)
    if cached is not None:
        return cached
    plan = plan or PeakPlan()
    with torch.no_grad():
        bytes_per_s = _copy_rate(platform, dtype, plan)
        flops_per_s, n = _matmul_rate(platform, dtype, plan)
    itemsize = torch.empty((), dtype=dtype).element_size()
    peaks = Peaks(device=device_name(platform), torch_version=torch.__version__, dtype=_dtype_name(dtype),
                  flops_per_s=flops_per_s, bytes_per_s=bytes_per_s, matmul_n=n,
                  copy_bytes=plan.copy_bytes // itemsize * itemsize)
    _write(path, peaks)
    return peaks


def _best_ns(platform: Platform, call: Callable[[], object], repeats: int) -> int:
    call()  # first call pays for allocation and library loading
    platform.synchronize()
    best = 0
    for _ in range(max(repeats, 1)):
        platform.synchronize()
        _, elapsed = platform.time_call(call)
        best = elapsed if best == 0 else min(best, elapsed)
    return max(best, 1)


def _copy_rate(platform: Platform, dtype: torch.dtype, plan: PeakPlan) -> float:
    itemsize = torch.empty((), dtype=dtype).element_size()
    count = max(plan.copy_bytes // itemsize, 1)
    source = torch.ones(count, dtype=dtype, device=platform.device)
    target = torch.empty_like(source)
    elapsed = _best_ns(platform, lambda: target.copy_(source), plan.repeats)
    return 2 * count * itemsize / (elapsed / 1e9)


def _matmul_rate(platform: Platform, dtype: torch.dtype, plan: PeakPlan) -> tuple[float, int]:
    n = plan.matmul_min_n
    while True:
        a = torch.randn(n, n, device=platform.device).to(dtype)
        b = torch.randn(n, n, device=platform.device).to(dtype)
        elapsed = _best_ns(platform, functools.partial(torch.mm, a, b), plan.repeats)
        if elapsed / 1e6 >= plan.matmul_target_ms or 2 * n > plan.matmul_max_n:
            return 2 * n**3 / (elapsed / 1e9), n
        n *= 2


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _cache_path(platform: Platform, dtype: torch.dtype, cache_dir: Path | None) -> Path:
    facts = platform.describe()
    # Thread count is part of a CPU's peak; a GPU platform reports none and the key is just the device.
    parts = [device_name(platform), facts.get("threads", ""), torch.__version__, _dtype_name(dtype)]
    key = "-".join(re.sub(r"[^A-Za-z0-9.+]+", "_", part).strip("_") for part in parts if part)
    return (cache_dir or default_cache_dir()).expanduser() / "peaks" / f"{key}.json"


def _read(path: Path) -> Peaks | None:
    try:
        return Peaks.model_validate_json(path.read_text())
    except (OSError, ValidationError, json.JSONDecodeError):
        return None  # absent or unreadable: measure again and overwrite


def _write(path: Path, peaks: Peaks) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written to a temporary file and renamed, so a concurrent reader sees the old file or the whole new one.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    with os.fdopen(handle, "w") as file:
        file.write(peaks.model_dump_json(indent=2))
    os.replace(temporary, path)
