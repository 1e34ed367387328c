"""Platforms as plugins: each module here implements `Platform` for one kind of device."""

from __future__ import annotations

from kforge.platforms.base import Platform, PlatformError, TimingDoubt
from kforge.platforms.cpu import CpuPlatform
from kforge.platforms.cuda import CudaPlatform
from kforge.platforms.mps import MpsPlatform
from kforge.platforms.rocm import RocmPlatform
from kforge.platforms.xpu import XpuPlatform

_PLATFORMS: dict[str, type[Platform]] = {
    platform.name: platform for platform in (CpuPlatform, CudaPlatform, RocmPlatform, XpuPlatform, MpsPlatform)
}
# What 'auto' tries, in order: a GPU of any kind before the CPU.
AUTO_ORDER = ("cuda", "rocm", "xpu", "mps", "cpu")


def register(platform: type[Platform]) -> type[Platform]:
    """Make a platform class available by its name (usable as a class decorator)."""
    _PLATFORMS[platform.name] = platform
    return platform


def platform_names() -> list[str]:
    return sorted(_PLATFORMS)


def platform_class(name: str) -> type[Platform]:
    """The registered class called `name`, whether or not its device is here; PlatformError when unknown."""
    cls = _PLATFORMS.get(name)
    if cls is None:
        raise PlatformError(f"unknown platform {name!r}; known: {', '.join(platform_names())}, auto")
    return cls


def get_platform(name: str) -> Platform:
    """The platform called `name`, or the best one present for 'auto'; PlatformError when unusable."""
    if name == "auto":
        for candidate in AUTO_ORDER:
            cls = _PLATFORMS.get(candidate)
            if cls is not None and cls.is_available():
                return cls()
        raise PlatformError("no usable platform found")
    cls = platform_class(name)
    if not cls.is_available():
        raise PlatformError(f"platform {name!r} is not available on this machine")
    return cls()


__all__ = ["AUTO_ORDER", "Platform", "PlatformError", "TimingDoubt", "get_platform", "platform_class", "platform_names",
           "register"]
