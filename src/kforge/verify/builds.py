"""Building candidates' C++/CUDA extensions, cached by what is compiled (runs inside the worker).

Candidates call `torch.utils.cpp_extension.load_inline` as they would anywhere. The worker swaps in a
wrapper that gives each distinct build (sources, functions, flags, torch version, and for CUDA sources the
target architectures and CUDA version) its own directory under the cache, so evaluating the same kernel
again loads the finished library instead of recompiling, and two candidates that happen to share a module
name never overwrite each other's build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils import cpp_extension

_ERROR_LINE = re.compile(r"(error|Error|undefined reference|fatal)")
_MAX_ERROR_LINES = 30


class BuildFailure(RuntimeError):
    """The candidate's extension did not compile; `log` holds the compiler's output."""

    def __init__(self, name: str, log: str) -> None:
        super().__init__(f"building extension {name!r} failed")
        self.log = log


class BuildRecorder:
    """Replaces load_inline for the life of the worker and keeps the time spent compiling."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self.seconds = 0.0
        self.builds = 0
        self._original: Callable[..., Any] = cpp_extension.load_inline

    def install(self) -> None:
        cpp_extension.load_inline = self.load_inline  # type: ignore[assignment]

    def load_inline(self, name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        if "build_directory" not in kwargs:
            key = build_key(name, cpp_sources, args, kwargs)
            directory = self.cache_dir / f"{_safe(name)}-{key[:20]}"
            directory.mkdir(parents=True, exist_ok=True)
            kwargs["build_directory"] = str(directory)
        kwargs["verbose"] = False
        started = time.perf_counter()
        try:
            return self._original(name, cpp_sources, *args, **kwargs)
        except (RuntimeError, OSError) as exc:
            raise BuildFailure(name, str(exc)) from None
        finally:
            self.seconds += time.perf_counter() - started
            self.builds += 1


def build_key(name: str, cpp_sources: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A digest of everything that changes the built library."""
    described = {
        "name": name,
        "cpp_sources": cpp_sources,
        "args": [repr(arg) for arg in args],
        "kwargs": {key: repr(value) for key, value in sorted(kwargs.items()) if key != "verbose"},
        "torch": torch.__version__,
        "python": sys.version,
    }
    if kwargs.get("cuda_sources", args[0] if args else None) or kwargs.get("with_cuda"):
        # Only CUDA builds depend on these; leaving them out of C++ builds keeps those keys stable.
        described["cuda_arch"] = target_architectures()
        described["cuda"] = torch.version.cuda
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=repr).encode()).hexdigest()


def target_architectures() -> str:
    """What load_inline compiles CUDA code for: TORCH_CUDA_ARCH_LIST, else the visible device's capability."""
    listed = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if listed:
        return listed
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f"{major}.{minor}"
    return ""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:40] or "ext"


def compiler_errors(log: str) -> str:
    """The lines of a compiler log a kernel engineer reads first: errors, with one line of context."""
    lines = log.splitlines()
    keep: list[int] = []
    for index, line in enumerate(lines):
        if _ERROR_LINE.search(line) and not line.lstrip().startswith("ninja: build stopped"):
            keep.extend(i for i in (index, index + 1) if i < len(lines))
    chosen = sorted(set(keep))[:_MAX_ERROR_LINES]
    text = "\n".join(lines[i] for i in chosen) if chosen else "\n".join(lines[-_MAX_ERROR_LINES:])
    return text.strip()
