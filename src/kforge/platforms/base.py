"""The platform plugin interface: everything the harness needs from a device, and nothing more.

A platform names its device, builds nothing itself (candidates build through their own language's
toolchain), and provides the four primitives the measurement rests on: synchronize, a timer, a cache
flush, and how the worker process should be limited. The checks in `kforge.verify` are written against
this interface only, so adding a device is adding one module here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import torch


class PlatformError(RuntimeError):
    """The requested platform cannot be used here; the message is one line for the user."""


class Platform(ABC):
    """One kind of device that candidates run on."""

    name: ClassVar[str]
    languages: ClassVar[tuple[str, ...]]
    #: whether RLIMIT_AS is a sound memory limit here (false where drivers reserve huge address ranges)
    limit_address_space: ClassVar[bool] = True

    @classmethod
    @abstractmethod
    def is_available(cls) -> bool:
        """True when this machine has the device."""

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

    @abstractmethod
    def flush_cache(self) -> None:
        """Evict the inputs from the caches, so that each timed call starts cold."""

    def describe(self) -> dict[str, str]:
        """Facts about the device worth recording beside a measurement."""
        return {"platform": self.name, "torch": torch.__version__}

    def worker_environment(self) -> dict[str, str]:
        """Extra environment variables for worker processes."""
        return {}
