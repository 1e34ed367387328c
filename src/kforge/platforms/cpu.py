"""The CPU platform: C++ candidates built with the host compiler, timed with the monotonic clock.

Triton candidates run here too, through Triton's interpreter (TRITON_INTERPRET=1), so that machines
without a GPU (CI among them) can check them for correctness; the interpreter's speed says nothing about
a GPU's, so they are never timed here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch

from kforge.platforms.base import Platform

# Captured when the worker imports this module, before any candidate code exists in the process, so a
# candidate that rebinds time.perf_counter_ns later does not reach the timer.
_clock = time.perf_counter_ns

_DEFAULT_LAST_LEVEL_CACHE = 32 * 1024 * 1024


def last_level_cache_bytes() -> int:
    """Largest cache the kernel reports for CPU 0, or a generous default where it reports none."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
        digits = text.rstrip("KM")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=_DEFAULT_LAST_LEVEL_CACHE)


class CpuPlatform(Platform):
    name = "cpu"
    languages = ("cpp", "triton")
    title = "a multi-core CPU"
    language_titles: ClassVar[dict[str, str]] = {"cpp": "C++ (OpenMP)", "triton": "Triton (interpreted)"}

    def __init__(self) -> None:
        self._flush_buffer: torch.Tensor | None = None
        self._flush_round = 0

    @classmethod
    def is_available(cls) -> bool:
        return True

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def synchronize(self) -> None:
        """CPU kernels run synchronously; nothing is queued."""

    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        start = _clock()
        result = call()
        return result, _clock() - start

    def flush_cache(self) -> None:
        if self._flush_buffer is None:
            # Twice the last-level cache, written in full, leaves none of the inputs resident.
            self._flush_buffer = torch.empty(2 * last_level_cache_bytes(), dtype=torch.uint8)
        self._flush_round = (self._flush_round + 1) % 251
        self._flush_buffer.fill_(self._flush_round)

    def untimed_reason(self, language: str) -> str | None:
        if language == "triton":
            return ("Triton ran in its CPU interpreter (TRITON_INTERPRET=1): correctness was checked, speed was "
                    "not measured; use --platform cuda on a GPU machine to time it")
        return None

    def worker_environment(self) -> dict[str, str]:
        return {"TRITON_INTERPRET": "1"}

    def describe(self) -> dict[str, str]:
        import platform

        return {**super().describe(), "device": platform.processor() or platform.machine(),
                "threads": str(torch.get_num_threads())}
