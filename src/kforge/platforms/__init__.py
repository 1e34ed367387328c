"""Platforms as plugins: each module here implements `Platform` for one kind of device."""

from __future__ import annotations

from kforge.platforms.base import Platform, PlatformError, TimingDoubt
from kforge.platforms.cpu import CpuPlatform
from kforge.platforms.cuda import CudaPlatform

_PLATFORMS: dict[str, type[Platform]] = {CpuPlatform.name: CpuPlatform, CudaPlatform.name: CudaPlatform}


def register(platform: type[Platform]) -> type[Platform]:
    """Make a platform class available by its name (usable as a class decorator)."""
    _PLATFORMS[platform.name] = platform
    return platform


def platform_names() -> list[str]:
    return sorted(_PLATFORMS)


def get_platform(name: str) -> Platform:
    """The platform called `name`, or the best one present for 'auto'; PlatformError when unusable."""
    if name == "auto":
        for candidate in ("cuda", "cpu"):
            cls = _PLATFORMS.get(candidate)
            if cls is not None and cls.is_available():
                return cls()
        raise PlatformError("no usable platform found")
    cls = _PLATFORMS.get(name)
    if cls is None:
        raise PlatformError(f"unknown platform {name!r}; known: {', '.join(platform_names())}, auto")
    if not cls.is_available():
        raise PlatformError(f"platform {name!r} is not available on this machine")
    return cls()


__all__ = ["Platform", "PlatformError", "TimingDoubt", "get_platform", "platform_names", "register"]
