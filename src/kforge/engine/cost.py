"""The engine's cost model: in which order to search a plan's variants, and the least time each could take.

The roofline puts a floor under any kernel's time: its minimum bytes at the device's copy bandwidth, and its FLOPs
at the rate of the units it computes on. The bandwidth floor holds for every variant. The compute floor holds only
where the measured peak is the rate of the units the variant uses: the peaks (profiling/peaks.py) are a large
`torch.mm` in the workload's dtype under PyTorch's defaults, so fp32 FMA for float32 (no TF32) and the tensor
cores for half precision. A float32 variant that computes on the tensor cores (`precision=tf32x3`, three TF32
products per product) can run faster than that fp32 peak, so its floor is the bandwidth's alone.

A search stops once a variant comes within 85% of its floor (verify/search.py, `GOOD_ENOUGH`): the last few
percent are the device's, not the plan's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kforge.profiling.schema import Peaks, Workload

# Variant precisions that compute a float32 product on the tensor cores (engine/triton: `precision`).
_TENSOR_CORE_FP32 = ("tf32x3", "tf32")


@dataclass(frozen=True)
class Floor:
    """The roofline's floor of one call, in milliseconds: moving its minimum bytes, and computing its FLOPs at the
    measured peak of the workload's dtype."""

    memory_ms: float
    compute_ms: float
    dtype: str

    @classmethod
    def of(cls, workload: Workload, peaks: Peaks) -> Floor:
        return cls(memory_ms=1e3 * workload.min_bytes / peaks.bytes_per_s,
                   compute_ms=1e3 * workload.flops / peaks.flops_per_s, dtype=workload.dtype)

    def for_variant(self, config: Mapping[str, Any]) -> float | None:
        """The least time a variant with `config` can take; None where it is not known: a float32 variant on the
        tensor cores of a compute-bound call (its rate is not the peak measured, and the bandwidth's floor alone
        would read as a few percent, however good the variant)."""
        if self.dtype == "float32" and config.get("precision") in _TENSOR_CORE_FP32:
            return self.memory_ms if self.memory_ms >= self.compute_ms else None
        return max(self.memory_ms, self.compute_ms)


@dataclass(frozen=True)
class CostModel:
    """What the search knows of the device before it tries anything: the call's floor (None where it was not
    measured) and whether the device has tensor cores for float32 products (TF32)."""

    floor: Floor | None
    tensor_cores: bool

    def order(self, configs: Sequence[Mapping[str, Any]]) -> list[int]:
        return search_order(configs, self.tensor_cores)

    def floor_ms(self, config: Mapping[str, Any]) -> float | None:
        return self.floor.for_variant(config) if self.floor is not None else None


def search_order(configs: Sequence[Mapping[str, Any]], tensor_cores: bool) -> list[int]:
    """The order to try the variants with `configs` in: on a device with tensor cores, float32 products on the
    tensor cores first (they are several times faster there at the same accuracy, `tf32x3`); otherwise the backend's
    own order (its default first)."""
    indices = list(range(len(configs)))
    if not tensor_cores:
        return indices
    return sorted(indices, key=lambda index: configs[index].get("precision") not in _TENSOR_CORE_FP32)


def share_of_floor(floor_ms: float, median_ms: float) -> float:
    """How close a variant's time comes to its floor (1.0: on it; above 1 where data stayed in a cache)."""
    return floor_ms / median_ms if median_ms > 0 else 0.0
