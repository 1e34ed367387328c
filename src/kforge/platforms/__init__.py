"""Platforms as plugins: each module here implements `Platform` for one kind of device.

Importing this package loads no platform, nor torch: the classes are imported the first time one is asked for, so
that `kforge targets` (targets.py) and the command line's checks of their input answer at once.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from kforge.platforms.errors import PlatformError

if TYPE_CHECKING:
    from kforge.platforms.base import Platform, TimingDoubt

# What 'auto' tries, in order: a GPU of any kind before the CPU.
AUTO_ORDER = ("cuda", "rocm", "xpu", "mps", "cpu")
_PLATFORMS: dict[str, type[Platform]] = {}


@cache
def _load_builtin() -> None:
    """Import the builtin platforms (and torch with them), once."""
    from kforge.platforms.cpu import CpuPlatform
    from kforge.platforms.cuda import CudaPlatform
    from kforge.platforms.mps import MpsPlatform
    from kforge.platforms.rocm import RocmPlatform
    from kforge.platforms.xpu import XpuPlatform

    for platform in (CpuPlatform, CudaPlatform, RocmPlatform, XpuPlatform, MpsPlatform):
        _PLATFORMS[platform.name] = platform


def _registry() -> dict[str, type[Platform]]:
    """Every registered platform class, the builtin ones imported on first use."""
    _load_builtin()
    return _PLATFORMS


def __getattr__(name: str) -> Any:
    """`Platform` and `TimingDoubt`, from base.py (which imports torch) when first named."""
    if name in ("Platform", "TimingDoubt"):
        from kforge.platforms import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(platform: type[Platform]) -> type[Platform]:
    """Make a platform class available by its name (usable as a class decorator)."""
    _registry()[platform.name] = platform
    return platform


def platform_names() -> list[str]:
    return sorted(_registry())


def platform_class(name: str) -> type[Platform]:
    """The registered class called `name`, whether or not its device is here; PlatformError when unknown."""
    cls = _registry().get(name)
    if cls is None:
        raise PlatformError(f"unknown platform {name!r}; known: {', '.join(platform_names())}, auto")
    return cls


def get_platform(name: str) -> Platform:
    """The platform called `name`, or the best one present for 'auto'; PlatformError when unusable."""
    if name == "auto":
        for candidate in AUTO_ORDER:
            cls = _registry().get(candidate)
            if cls is not None and cls.is_available():
                return cls()
        raise PlatformError("no usable platform found")
    cls = platform_class(name)
    if not cls.is_available():
        raise PlatformError(f"platform {name!r} is not available on this machine")
    return cls()


__all__ = ["AUTO_ORDER", "Platform", "PlatformError", "TimingDoubt", "get_platform", "platform_class", "platform_names",
           "register"]
