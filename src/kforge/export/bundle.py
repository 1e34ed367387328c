"""Writing a solution with the extensions built for this machine beside it.

`export_solution` copies the solution's libraries from the harness's build store (verify/artifact_store.py:
what the run's sandboxed workers built from exactly this source, each file checked against the hash the harness
recorded when it stored it) into `build/` next to the exported file, with a manifest of the machine they were
built on, and writes the solution with the loader of `export/prebuilt.py`. Where the store holds none, or a file
fails its check, the solution is first built in a sandboxed build worker, exactly as an evaluation builds it, and
copied from the store then. Nothing is copied from a folder a worker could write: the exported libraries load
outside any sandbox, in the user's own `python`. Imported on this machine, the solution loads those libraries in
about a second; anywhere else it compiles, as any `load_inline` solution does.
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
from kforge.platforms import Platform, PlatformError, get_platform
from kforge.verify.artifact_store import ArtifactStore, StoreMismatch, artifact_key
from kforge.verify.extension_cache import machine_identity
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
    build = out_file.parent / BUILD_FOLDER
    shutil.rmtree(build, ignore_errors=True)  # a previous export's libraries must not pass for this one's
    copied, failure = _stored_libraries(source, platform, build, cache)
    if failure:
        result.note = f"no build bundled ({failure}); the solution compiles on its first import"
        out_file.write_text(with_prebuilt_loader(source))
        return result
    libraries = []
    for folder, file in copied:
        result.written.append(build / folder / file)
        libraries.append({"name": Path(file).stem, "folder": folder, "file": file})
    manifest = build / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({
        "machine": machine_identity(), "platform": platform.name, "torch": torch.__version__,
        "python": sys.version.split()[0], "libraries": libraries}, indent=2) + "\n")
    result.written.append(manifest)
    result.libraries = len(libraries)
    out_file.write_text(with_prebuilt_loader(source))
    return result


def _stored_libraries(source: str, platform: Platform, build: Path, cache: Path) -> tuple[list[tuple[str, str]], str]:
    """The solution's libraries copied from the build store into `build` (checked as they are copied), built first
    where the store has none or a stored file fails its check: the (build folder, file) of each, and why there are
    none when they could not be had."""
    store, key = ArtifactStore.under(cache), artifact_key(source)
    try:
        copied = store.copy_libraries(key, build)
    except StoreMismatch:
        copied = []  # the entry is dropped: build it again
    if copied:
        return copied, ""
    built = prebuild(source, build_environment(platform, os.cpu_count() or 1), cache)
    if not built.ok:
        return [], built.message
    try:
        return store.copy_libraries(key, build), ""
    except StoreMismatch as mismatch:
        return [], f"the build store's copy failed its check: {mismatch}"
