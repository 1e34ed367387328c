"""Where a built C++/CUDA extension lives, named by everything that changes it.

The worker's build cache (`verify/builds.py`) and an exported solution's loader (`kforge.export`) must agree on
the name of a build to the byte, so both use these functions, and the exporter copies their source text into
the solutions it writes. That is why this module needs nothing but the standard library and torch, and why
its functions name no other function of kforge.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

import torch

# Keyword arguments of load_inline that do not change the library it builds.
_NOT_IN_KEY = ("verbose", "build_directory")


def build_key(name: str, cpp_sources: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A digest of everything that changes the built library: sources, functions, flags, torch and Python, and
    for CUDA sources the target architectures and CUDA version."""
    described = {
        "name": name,
        "cpp_sources": cpp_sources,
        "args": [repr(arg) for arg in args],
        "kwargs": {key: repr(value) for key, value in sorted(kwargs.items()) if key not in _NOT_IN_KEY},
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


def build_folder_name(name: str, key: str) -> str:
    """The folder a build of extension `name` with digest `key` is kept in."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)[:40] or "ext"
    return f"{safe}-{key[:20]}"


def library_file(folder: Path, name: str) -> Path:
    """The shared library load_inline leaves in its build folder for extension `name`."""
    return folder / f"{name}{'.pyd' if sys.platform == 'win32' else '.so'}"


def machine_identity() -> dict[str, str]:
    """What a built library depends on beyond its build key: the processor it was compiled on (a build may use
    instructions another processor lacks) and the operating system."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        model = platform.processor()
    return {"system": platform.system(), "machine": platform.machine(), "processor": model}
