"""Making the calls into a candidate's C++ extension visible to torch.profiler on a host-only platform.

The operator profiler sees only the ATen operators an extension happens to call (an `empty_like` for its
output, say), not the extension's own function, where the time goes. So for the length of a profile each
public function of every run-time built extension is replaced on its module by a wrapper that opens a
`record_function` named `<module>::<function>`; the originals are put back afterwards.

A run-time built extension (load_inline, load) is a native module that lives outside the interpreter's
own directories (where torch, numpy and the standard library are installed). torch imports these without
entering them in sys.modules, so they are found through the garbage collector's list of live modules.
A candidate that kept a direct reference to a function (`fn = ext.forward` at import) bypasses the
wrapper: its extension's inner operators then appear as rows, and its own time only as idle time.
"""

from __future__ import annotations

import functools
import gc
import importlib.machinery
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from torch.profiler import record_function


@contextmanager
def labelled_extension_calls() -> Iterator[list[str]]:
    """Within the block, every call into a run-time built extension is a `<module>::<function>` range.

    Yields the labels in use.
    """
    replaced: list[tuple[ModuleType, str, Any]] = []
    try:
        for module in runtime_extensions():
            for name, function in list(vars(module).items()):
                if not name.startswith("_") and type(function).__name__ == "builtin_function_or_method":
                    setattr(module, name, _labelled(f"{module.__name__}::{name}", function))
                    replaced.append((module, name, function))
        yield [f"{module.__name__}::{name}" for module, name, _ in replaced]
    finally:
        for module, name, function in reversed(replaced):
            setattr(module, name, function)


def _labelled(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        with record_function(label):
            return function(*args, **kwargs)

    return call


def runtime_extensions() -> list[ModuleType]:
    """Native modules loaded from outside the interpreter's installation: extensions built at run time."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    installed = _installed_roots()
    found: dict[int, ModuleType] = {}
    # Lazy module proxies are skipped (`type(...) is ModuleType`): touching them imports or warns.
    for module in [*sys.modules.values(), *(o for o in gc.get_objects() if type(o) is ModuleType)]:
        file = getattr(module, "__file__", None) if type(module) is ModuleType else None
        if not isinstance(file, str) or not file.endswith(suffixes) or id(module) in found:
            continue
        resolved = Path(file).resolve()
        if not any(resolved.is_relative_to(root) for root in installed):
            found[id(module)] = module
    return list(found.values())


def _installed_roots() -> set[Path]:
    roots = {Path(path).resolve() for key, path in sysconfig.get_paths().items()
             if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {Path(path).resolve() for path in sys.path if "site-packages" in path or "dist-packages" in path}
    return roots
