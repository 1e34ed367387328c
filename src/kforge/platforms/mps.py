"""The Apple MPS platform: kernels in Metal Shading Language on an Apple GPU, compiled at run time.

A candidate compiles its Metal source with `torch.mps.compile_shader` (torch 2.7 on) and calls the kernels
of the library it returns on MPS tensors. Timed with MPS events and `torch.mps.synchronize` (`events.py`).
The GPU shares the machine's memory with the CPU, behind a system-level cache whose size Apple does not
publish, so the flush writes a fixed buffer well above every reported size. Not yet run on an Apple GPU:
docs/platforms.md.
"""

from __future__ import annotations

import platform
from typing import Any, ClassVar

import torch

from kforge.platforms.events import EventTimedPlatform

# Captured when the worker imports this module, before any candidate code exists in the process.
_synchronize = torch.mps.synchronize
_Event = torch.mps.event.Event
_record = torch.mps.event.Event.record
_elapsed_time = torch.mps.event.Event.elapsed_time

# Reported system-level caches reach 96 MB (M1 and M2 Ultra); writing 256 MiB leaves none of the inputs
# resident, and on a small machine the flush takes at most a sixteenth of what Metal recommends using.
UNIFIED_FLUSH_BYTES = 256 * 1024 * 1024
MIN_FLUSH_BYTES = 64 * 1024 * 1024

# Metal command-buffer failures (matched in lower case): the queue does not recover from them.
STICKY_ERRORS = (
    "kiogpucommandbuffercallbackerror",
    "gpu timeout error",
    "command buffer exited with error",
)


def flush_bytes(recommended_max_memory: int) -> int:
    """Bytes written between timed calls, given what Metal recommends this process use at most."""
    return max(MIN_FLUSH_BYTES, min(UNIFIED_FLUSH_BYTES, recommended_max_memory // 16))


def can_compile_metal(mps_module: Any) -> bool:
    """Whether this torch compiles Metal source at run time (`torch.mps.compile_shader`, torch 2.7 on)."""
    return callable(getattr(mps_module, "compile_shader", None))


class MpsPlatform(EventTimedPlatform):
    name = "mps"
    languages = ("metal",)
    title = "an Apple GPU (MPS)"
    language_titles: ClassVar[dict[str, str]] = {"metal": "Metal Shading Language"}
    sticky_errors = STICKY_ERRORS

    @classmethod
    def is_available(cls) -> bool:
        return torch.backends.mps.is_available() and can_compile_metal(torch.mps)

    @property
    def device(self) -> torch.device:
        return torch.device("mps")

    def synchronize(self) -> None:
        """MPS has one queue per process: waiting for it waits for all the device's work of this process."""
        _synchronize()

    def new_event(self) -> Any:
        return _Event(enable_timing=True)

    def record(self, event: Any) -> None:
        _record(event)

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(_elapsed_time(start, end))

    def flush_bytes(self) -> int:
        return flush_bytes(torch.mps.recommended_max_memory())

    def free_bytes(self) -> int | None:
        return max(0, torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "device": f"Apple GPU ({platform.machine()})",
                "macos": platform.mac_ver()[0] or "?",
                "recommended_memory_gib": f"{torch.mps.recommended_max_memory() / 2**30:.0f}"}
