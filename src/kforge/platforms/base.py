"""The platform plugin interface: everything the harness needs from a device, and nothing more.

A platform names its device, builds nothing itself (candidates build through their own language's
toolchain), and provides the four primitives the measurement rests on: synchronize, a timer, a cache
flush, and how the worker process should be limited. The checks in `kforge.verify` are written against
this interface only, so adding a device is adding one module here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from kforge.platforms.errors import PlatformError

__all__ = ["Platform", "PlatformError", "TimingDoubt"]


@dataclass(frozen=True)
class TimingDoubt:
    """A reason to distrust the times a platform measured, named by the policy rule it breaks."""

    rule: str
    message: str


class Platform(ABC):
    """One kind of device that candidates run on."""

    name: ClassVar[str]
    languages: ClassVar[tuple[str, ...]]
    #: the device in words, for people and prompts ("an NVIDIA GPU")
    title: ClassVar[str] = "a device"
    #: each language in words ("CUDA C++"); a language not named here is shown by its name
    language_titles: ClassVar[dict[str, str]] = {}
    #: whether RLIMIT_AS is a sound memory limit here (false where drivers reserve huge address ranges)
    limit_address_space: ClassVar[bool] = True
    #: whether a call can return before the device has finished its work (true for GPUs); outputs are
    #: then copied on the caller's stream before any device-wide wait, so work left running shows up
    asynchronous: ClassVar[bool] = False
    #: the environment variable that shows a process only some of the devices (a suite pins each task to
    #: one); None where there is one device or the platform is the CPU
    visible_devices_variable: ClassVar[str | None] = None

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool:
        """True when this machine has the device."""

    @classmethod
    def device_count(cls) -> int:
        """How many of its devices this process sees (1 for a platform of one device, when present)."""
        return 1 if cls.is_available() else 0

    @classmethod
    def device_memory(cls, index: int) -> int | None:
        """Bytes of memory on this process's `index`th device, read without creating a context on it; None where
        the platform cannot tell (the CPU, and MPS, whose memory is the host's)."""
        return None

    @property
    @abstractmethod
    def device(self) -> torch.device:
        """Where inputs, parameters and outputs live."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until all work queued on the device has finished."""

    @abstractmethod
    def time_call(self, call: Callable[[], Any]) -> tuple[Any, int]:
        """Run `call` once with the device idle before and after; return its result and elapsed nanoseconds."""

    def host_bound(self) -> bool | None:
        """Whether the latest timed call's figure is the host's time to issue it rather than the device's
        time to run it; None on a platform where the two are one (the CPU)."""
        return None

    def lead_in_ns(self) -> int:
        """Device time the platform queued before the latest timed call and waited for, not part of the call.

        A second clock around `time_call` sees it; the figure `time_call` returns does not (the CUDA
        platform's hold, for instance). 0 unless a platform says otherwise."""
        return 0

    @abstractmethod
    def flush_cache(self) -> None:
        """Evict the inputs from the caches, so that each timed call starts cold."""

    def describe(self) -> dict[str, str]:
        """Facts about the device worth recording beside a measurement."""
        return {"platform": self.name, "torch": torch.__version__}

    def worker_environment(self) -> dict[str, str]:
        """Extra environment variables for worker processes."""
        return {}

    def untimed_reason(self, language: str) -> str | None:
        """Why candidates in `language` are checked for correctness only here, or None when they are timed."""
        return None

    def poison_free_memory(self, reserve_bytes: int) -> None:
        """Fill the memory the next allocations will receive with a sentinel, so unwritten outputs show.

        `reserve_bytes` is how much fresh memory to poison beyond what the allocator already holds. The
        default does nothing: the CPU's allocator is not what hands a kernel someone else's answer.
        """
        return None

    def prepare_run(self) -> None:
        """Build whatever the platform's own timing needs while programs may still run: a candidate's run phase
        (verify/run_phase.py) refuses them from then on. The default needs nothing."""
        return None

    def audit_timing(self, times_ns: list[int]) -> TimingDoubt | None:
        """After a timing loop: a reason to distrust the last `len(times_ns)` calls' figures, or None."""
        return None

    def device_lost(self, error: BaseException) -> str | None:
        """When `error` left the device unusable for the rest of this process: a one-line reason; else None."""
        return None
