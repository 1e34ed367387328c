"""Writing a solution with the extensions built for this machine beside it.

`export_solution` builds the solution's extensions in a sandboxed build worker, exactly as an evaluation does
(usually a cache hit: the run built them already), copies each library into `build/` next to the exported file
with a manifest of the machine they were built on, and writes the solution with the loader of
`export/prebuilt.py`. Imported on this machine, the solution loads those libraries in about a second; anywhere
else it compiles, as any `load_inline` solution does.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kforge.export.prebuilt import calls_load_inline, with_prebuilt_loader
from kforge.paths import cache_dir
from kforge.platforms import PlatformError, get_platform
from kforge.verify.extension_cache import library_file, machine_identity
from kforge.verify.prebuild import build_environment, prebuild

BUILD_FOLDER = "build"


@dataclass
class ExportedSolution:
    """What `export_solution` wrote, and one line on the builds when they could not be bundled."""

    written: list[Path] = field(default_factory=list)
    libraries: int = 0
    note: str = ""


def export_solution(source: str, platform_name: str, out_file: Path, cache: Path | None = None) -> ExportedSolution:
    """Write `source` to `out_file`, with its extensions built for this machine under `build/` beside it when it
    has any (`platform_name` is the platform the run judged it on)."""
    result = ExportedSolution()
    out_file.parent.mkdir(parents=True, exist_ok=True)
    if not calls_load_inline(source):
        out_file.write_text(source)
        result.written.append(out_file)
        return result
    result.written.append(out_file)
    try:
        platform = get_platform(platform_name)
    except PlatformError as exc:
        result.note = f"no build bundled ({exc}); the solution compiles on its first import"
        out_file.write_text(with_prebuilt_loader(source))
        return result
    cache = (cache or cache_dir()).expanduser()
    built = prebuild(source, build_environment(platform, cache, os.cpu_count() or 1), cache)
    if not built.ok:
        result.note = f"no build bundled ({built.message}); the solution compiles on its first import"
        out_file.write_text(with_prebuilt_loader(source))
        return result
    build = out_file.parent / BUILD_FOLDER
    shutil.rmtree(build, ignore_errors=True)  # a previous export's libraries must not pass for this one's
    libraries = []
    for name, folder in built.libraries:
        library = library_file(folder, name)
        if not library.is_file():
            continue
        target = library_file(build / folder.name, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(library, target)
        result.written.append(target)
        libraries.append({"name": name, "folder": folder.name, "file": target.name})
    manifest = build / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({
        "machine": machine_identity(), "platform": platform.name, "torch": torch.__version__,
        "python": sys.version.split()[0], "libraries": libraries}, indent=2) + "\n")
    result.written.append(manifest)
    result.libraries = len(libraries)
    out_file.write_text(with_prebuilt_loader(source))
    return result
