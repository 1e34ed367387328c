"""Building candidates' C++/CUDA extensions, cached by what is compiled (runs inside the worker).

Candidates call `torch.utils.cpp_extension.load_inline` as they would anywhere. The worker swaps in a
wrapper that gives each distinct build (sources, functions, flags, torch version, and for CUDA sources the
target architectures and CUDA version) its own folder under the worker's build folder, which lies in the
worker's own directory and goes with it (verify/worker_layout.py). When the harness has restored that build's
library there from its store (verify/artifact_store.py: checked against the hashes it recorded when an earlier
worker of the same candidate built it), the wrapper loads it as load_inline would once built, and nothing
compiles. Ninja is not asked: its build file names the sources by absolute path, inside the directory of the
worker that built them, so it would compile everything again in any other worker.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils import cpp_extension

from kforge.verify.extension_cache import build_folder_name, build_key, library_file

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
        started = time.perf_counter()
        if "build_directory" not in kwargs:
            directory = self.cache_dir / build_folder_name(name, build_key(name, cpp_sources, args, kwargs))
            restored = _load_restored(name, directory, kwargs)
            if restored is not None:
                self.seconds += time.perf_counter() - started
                self.builds += 1
                return restored
            directory.mkdir(parents=True, exist_ok=True)
            kwargs["build_directory"] = str(directory)
        kwargs["verbose"] = False
        try:
            return self._original(name, cpp_sources, *args, **kwargs)
        except (RuntimeError, OSError) as exc:
            raise BuildFailure(name, str(exc)) from None
        finally:
            self.seconds += time.perf_counter() - started
            self.builds += 1


def _load_restored(name: str, directory: Path, kwargs: dict[str, Any]) -> Any:
    """The library the harness restored into `directory`, loaded as load_inline loads it once built (a module, or
    with `is_python_module=False` its operators registered and its path); None when there is none, or it does not
    load (load_inline then builds it again)."""
    library = library_file(directory, name)
    if kwargs.get("is_standalone") or not library.is_file():
        return None
    try:
        if not kwargs.get("is_python_module", True):
            torch.ops.load_library(str(library))
            return str(library)
        import importlib.util

        spec = importlib.util.spec_from_file_location(name, library)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except (ImportError, OSError, RuntimeError):
        return None


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
