"""Documented hardware limits of a target device, read from `data/knowledge/limits.yaml`.

Validators compare what a candidate asks for (threads per block, shared memory, warps) against these.
A field left at None means "unknown or not applicable here": the checks that need it are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True)
class DeviceLimits:
    platform: str = "generic"
    device_name: str | None = None
    #: threads per CUDA block / Metal threadgroup / SYCL work-group
    max_threads_per_block: int | None = None
    #: per-dimension limits on a block's shape (x, y, z)
    max_block_dims: tuple[int, int, int] | None = None
    #: bytes of shared memory one block may use in total, with the opt-in attribute where one exists
    max_shared_memory_per_block: int | None = None
    #: bytes of statically declared shared memory per block (CUDA: 48 KiB, above it only dynamic memory)
    max_static_shared_memory: int | None = None
    #: Triton's num_warps upper bound (threads per block divided by the warp size)
    max_num_warps: int | None = None
    warp_size: int | None = None
    #: Metal threadgroup memory per threadgroup, in bytes
    max_threadgroup_memory: int | None = None
    #: Intel shared local memory available to one work-group, in bytes
    slm_size: int | None = None
    #: Intel register-file modes the compiler accepts (Triton's grf_mode option)
    grf_modes: tuple[str, ...] = ()
    #: Intel sub-group (SIMD) widths the device supports
    sub_group_sizes: tuple[int, ...] = ()
    #: streaming multiprocessors / compute units / Xe-cores, where documented
    multiprocessors: int | None = None

    @classmethod
    def defaults(cls, platform: str, device_name: str | None = None) -> DeviceLimits:
        """The documented limits for `platform` ("cuda", "cpu", "mps", "xpu"), refined by `device_name`.

        A device is matched when one of its `match` strings occurs in `device_name` (case-insensitive),
        so "NVIDIA H200" and "NVIDIA H200 NVL" both find the H200 entry. An unknown platform gives a
        DeviceLimits with every limit unknown.
        """
        table = _limits_table().get(platform)
        if table is None:
            return cls(platform=platform, device_name=device_name)
        values: dict[str, Any] = dict(table.get("generic", {}))
        if device_name:
            lowered = device_name.lower()
            for device in table.get("devices", []):
                if any(key.lower() in lowered for key in device["match"]):
                    values.update({k: v for k, v in device.items() if k != "match"})
                    break
        return cls(platform=platform, device_name=device_name, **_coerce(values))


def _coerce(values: dict[str, Any]) -> dict[str, Any]:
    known = {f.name for f in fields(DeviceLimits)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"limits.yaml: unknown field(s) {', '.join(sorted(unknown))}")
    for name in ("max_block_dims", "grf_modes", "sub_group_sizes"):
        if name in values and values[name] is not None:
            values[name] = tuple(values[name])
    return values


@lru_cache(maxsize=1)
def _limits_table() -> dict[str, Any]:
    text = resources.files("kforge").joinpath("data/knowledge/limits.yaml").read_text()
    return yaml.safe_load(text)
