"""The Intel XPU platform: Triton and SYCL (load_inline's sycl_sources) candidates on an Intel GPU.

Timed with XPU events on the caller's stream and a device-wide synchronize (`events.py`); the cache flush
writes twice the last-level cache the device reports. Not yet run on an Intel GPU: docs/platforms.md.
"""

from __future__ import annotations

import contextlib
import re
from importlib import metadata
from typing import Any, ClassVar

import torch

from kforge.platforms.events import EventTimedPlatform
from kforge.platforms.gpu import flush_bytes, reported_size

# Captured when the worker imports this module, before any candidate code exists in the process.
_synchronize = torch.xpu.synchronize
_current_stream = torch.xpu.current_stream
_Event = torch.xpu.Event
_record = torch.xpu.Event.record
_elapsed_time = torch.xpu.Event.elapsed_time

# Used when the device reports no last-level cache (older torch): above the 408 MB L2 of the Data Center GPU
# Max 1550, the largest of current Intel GPUs.
DEFAULT_LAST_LEVEL_CACHE_BYTES = 512 * 1024 * 1024

# Ahead-of-time targets for torch's SYCL builds (TORCH_XPU_ARCH_LIST), by a fragment of the device name; a
# device not listed builds for torch's own list.
AOT_TARGETS = (
    ("data center gpu max", "pvc"),
    ("arc(tm) b", "bmg"),
    ("arc b", "bmg"),
    ("arc(tm) a", "dg2"),
    ("arc a", "dg2"),
    ("flex", "dg2"),
)

SYCL_SINCE = (2, 7)

# Driver errors after which the Level Zero context is unusable (matched in lower case).
STICKY_ERRORS = (
    "ur_result_error_device_lost",
    "ze_result_error_device_lost",
    "device lost",
    "pi_error_device_not_available",
)


def last_level_cache_bytes(properties: object) -> int:
    """The last-level cache a device reports (`torch.xpu.get_device_properties(...).last_level_cache_size`)."""
    return reported_size(properties, "last_level_cache_size", DEFAULT_LAST_LEVEL_CACHE_BYTES)


def aot_target(device_name: str) -> str | None:
    """The SYCL ahead-of-time target for a device name ('Intel(R) Data Center GPU Max 1550' -> 'pvc'), or None."""
    lowered = device_name.lower()
    return next((target for fragment, target in AOT_TARGETS if fragment in lowered), None)


def supports_sycl(torch_version: str) -> bool:
    """Whether this torch's `load_inline` takes SYCL sources (`sycl_sources`, torch 2.7 on).

    Read from the version rather than from `load_inline` itself: importing torch.utils.cpp_extension costs
    a third of a second, on every worker's start.
    """
    numbers = re.match(r"(\d+)\.(\d+)", torch_version)
    return numbers is not None and (int(numbers.group(1)), int(numbers.group(2))) >= SYCL_SINCE


class XpuPlatform(EventTimedPlatform):
    name = "xpu"
    languages = ("triton", "sycl") if supports_sycl(torch.__version__) else ("triton",)
    title = "an Intel GPU (XPU)"
    language_titles: ClassVar[dict[str, str]] = {"triton": "Triton", "sycl": "SYCL C++"}
    sticky_errors = STICKY_ERRORS
    visible_devices_variable = "ZE_AFFINITY_MASK"  # Level Zero's device selection

    def __init__(self, index: int = 0) -> None:
        super().__init__()
        self._index = index

    @classmethod
    def is_available(cls) -> bool:
        return torch.xpu.is_available()

    @classmethod
    def device_count(cls) -> int:
        return torch.xpu.device_count() if cls.is_available() else 0

    @classmethod
    def device_memory(cls, index: int) -> int | None:
        return int(torch.xpu.get_device_properties(index).total_memory) if cls.is_available() else None

    @property
    def device(self) -> torch.device:
        return torch.device("xpu", self._index)

    def synchronize(self) -> None:
        _synchronize(self._index)

    def new_event(self) -> Any:
        return _Event(enable_timing=True)

    def record(self, event: Any) -> None:
        _record(event, _current_stream(self._index))

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(_elapsed_time(start, end))

    def flush_bytes(self) -> int:
        return flush_bytes(last_level_cache_bytes(torch.xpu.get_device_properties(self._index)))

    def free_bytes(self) -> int | None:
        return int(torch.xpu.mem_get_info(self._index)[0]) if hasattr(torch.xpu, "mem_get_info") else None

    def worker_environment(self) -> dict[str, str]:
        target = aot_target(torch.xpu.get_device_properties(self._index).name)
        return {"TORCH_XPU_ARCH_LIST": target} if target else {}

    def describe(self) -> dict[str, str]:
        properties = torch.xpu.get_device_properties(self._index)
        facts = {**super().describe(), "device": properties.name, "driver": str(properties.driver_version),
                 "xe_cores": str(getattr(properties, "gpu_subslice_count", "?")),
                 "sub_group_sizes": ",".join(map(str, properties.sub_group_sizes)),
                 "memory_gib": f"{properties.total_memory / 2**30:.0f}",
                 "llc_mib": f"{last_level_cache_bytes(properties) / 2**20:.0f}"}
        with contextlib.suppress(metadata.PackageNotFoundError):
            facts["triton"] = metadata.version("pytorch-triton-xpu")
        return facts
