"""One profile schema for every platform and every profiler.

A `Profile` is what the performance-analysis agent reads: where the time of one forward call goes (kernel
rows), how much of it the device is busy, how many launches it takes, and how close the call comes to the
roofline bound of the device. torch.profiler on any platform and Nsight Compute on NVIDIA both produce it,
so the renderers and the agent never need to know which one ran.

A profile may come back from the sandboxed worker, where candidate code runs; validating the reply
against these models is the harness's first check on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Source = Literal["torch.profiler", "ncu"]
Bound = Literal["memory", "compute"]
#: "flop_counter": torch.utils.flop_counter (matmuls, convolutions, attention);
#: "elementwise": no such op ran, so one op per output element of each pointwise ATen op and one per
#: input element of each reduction or normalization
FlopsMethod = Literal["flop_counter", "elementwise"]
#: "kernel": device kernels; "op": on a host-only platform, top-level operators and extension calls
RowKind = Literal["kernel", "op"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelRow(_Frozen):
    """One kernel (or, on a host-only platform, one top-level operator) summed over the profiled calls."""

    name: str
    calls: int = Field(ge=0, description="invocations over all profiled forward calls")
    total_us: float = Field(ge=0)
    mean_us: float = Field(ge=0)
    share: float = Field(ge=0, le=1, description="fraction of the summed time of all rows")


class Workload(_Frozen):
    """What one forward call of the reference must do, whoever implements it."""

    flops: float = Field(ge=0)
    flops_method: FlopsMethod
    min_bytes: int = Field(ge=0, description="inputs, parameters and buffers read once, outputs written once")
    dtype: str = Field(description="the floating dtype holding most of those bytes, e.g. 'float32'")


class Peaks(_Frozen):
    """What the device was measured to sustain: a large copy and a large matmul."""

    device: str
    torch_version: str
    dtype: str
    flops_per_s: float = Field(gt=0)
    bytes_per_s: float = Field(gt=0, description="bytes read plus bytes written per second")
    matmul_n: int
    copy_bytes: int


class Roofline(_Frozen):
    """How close one forward call comes to the bound the roofline model puts on it."""

    flops_per_call: float = Field(ge=0)
    flops_method: FlopsMethod
    min_bytes_per_call: int = Field(ge=0)
    time_us_per_call: float = Field(gt=0, description="the time the achieved rates are computed from")
    achieved_flops_per_s: float = Field(ge=0)
    achieved_bytes_per_s: float = Field(ge=0)
    peak_flops_per_s: float = Field(gt=0)
    peak_bytes_per_s: float = Field(gt=0)
    bound: Bound
    fraction_of_bound: float = Field(ge=0, description="achieved / attainable; above 1 when data stayed in cache")

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte of the minimum traffic."""
        return self.flops_per_call / self.min_bytes_per_call if self.min_bytes_per_call else 0.0

    @property
    def ridge_intensity(self) -> float:
        """The intensity at which the device turns from memory-bound to compute-bound."""
        return self.peak_flops_per_s / self.peak_bytes_per_s


class Profile(_Frozen):
    """Where the time of one forward call goes, on one device, as one profiler saw it."""

    source: Source
    platform: str
    device: str
    calls: int = Field(ge=1, description="forward calls the rows are summed over")
    row_kind: RowKind = "kernel"
    rows: tuple[KernelRow, ...] = Field(description="largest total first")
    device_time_us_per_call: float = Field(ge=0, description="summed kernel time of one call")
    wall_time_us_per_call: float | None = Field(None, description="median end-to-end time, without profiler")
    launches_per_call: float = Field(ge=0)
    roofline: Roofline | None = None

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Profile:
        return cls.model_validate_json(text)


def kernel_rows(totals: Mapping[str, tuple[int, float]]) -> tuple[KernelRow, ...]:
    """Rows from {name: (invocations, total microseconds)}, largest first, with shares of their sum."""
    grand = sum(total for _, total in totals.values())
    rows = [KernelRow(name=name, calls=calls, total_us=total, mean_us=total / calls if calls else 0.0,
                      share=min(1.0, total / grand) if grand > 0 else 0.0)
            for name, (calls, total) in totals.items()]
    return tuple(sorted(rows, key=lambda row: (-row.total_us, row.name)))
