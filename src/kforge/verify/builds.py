"""Building candidates' C++/CUDA extensions, cached by what is compiled (runs inside the worker).

Candidates call `torch.utils.cpp_extension.load_inline` as they would anywhere. The worker swaps in a
wrapper that gives each distinct build (sources, functions, flags, torch version, and for CUDA sources the
target architectures and CUDA version) its own directory under the cache, so evaluating the same kernel
again loads the finished library instead of recompiling, and two candidates that happen to share a module
name never overwrite each other's build.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.utils import cpp_extension

from kforge.verify.extension_cache import build_folder_name, build_key

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
        self.libraries: list[tuple[str, Path]] = []  # (extension name, its build folder) of every cached build
        self._original: Callable[..., Any] = cpp_extension.load_inline

    def install(self) -> None:
        cpp_extension.load_inline = self.load_inline  # type: ignore[assignment]

    def load_inline(self, name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        if "build_directory" not in kwargs:
            directory = self.cache_dir / build_folder_name(name, build_key(name, cpp_sources, args, kwargs))
            directory.mkdir(parents=True, exist_ok=True)
            kwargs["build_directory"] = str(directory)
            self.libraries.append((name, directory))
        kwargs["verbose"] = False
        started = time.perf_counter()
        try:
            return self._original(name, cpp_sources, *args, **kwargs)
        except (RuntimeError, OSError) as exc:
            raise BuildFailure(name, str(exc)) from None
        finally:
            self.seconds += time.perf_counter() - started
            self.builds += 1


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
