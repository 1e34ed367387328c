"""The kernel sandbox's rules for one worker: `data/sandbox.toml` with this machine's paths filled in.

The harness builds a `Confinement` here for each worker it starts (its own directory, the caches it may write,
the PATH it runs with); the worker applies it to itself (verify/confine.py) before importing anything else.
"""

from __future__ import annotations

import errno
import functools
import glob
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import kforge
from kforge.verify import worker_user
from kforge.verify.confine import CLONE_FLAGS, Confinement, SyscallRule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, object]:
    """data/sandbox.toml, read once."""
    return tomllib.loads(resources.files("kforge").joinpath("data/sandbox.toml").read_text())


def confinement_for(worker: Path, writable: Iterable[Path], environment: Mapping[str, str],
                    trusted: bool = False) -> Confinement:
    """The limits of a worker whose own directory is `worker`, which may also write `writable` (created here if
    missing) and runs with `environment` (its PATH finds the programs the rules name). A `trusted` worker (the
    reference's) shares one user with the others of its kind, for the caches they share; any other worker gets
    a user of its own (verify/worker_user.py)."""
    writable = list(writable)
    for path in writable:
        path.mkdir(parents=True, exist_ok=True)
    values = {**machine_values(), "worker": [str(worker)], "writable": [str(p) for p in writable]}
    search = environment.get("PATH", os.defpath)
    table = rules()
    network = dict(table.get("network", {}))  # type: ignore[call-overload]
    limits = dict(table.get("limits", {}))  # type: ignore[call-overload]
    user_id, refused = worker_user.planned_base()
    return Confinement(
        read=_paths(table, "read", values),
        write=_paths(table, "write", values),
        devices=_paths(table, "devices", values),
        execute=_paths(table, "programs", values) + _programs(table, search),
        denied_syscalls=tuple(dict(table.get("syscalls", {}))),  # type: ignore[call-overload]
        syscall_rules=syscall_rules(table.get("syscall_rules", [])),  # type: ignore[arg-type]
        allowed_socket_families=tuple(network.get("allowed_socket_families", ())),
        network_namespace=bool(network.get("namespace", True)),
        process_namespace=bool(dict(table.get("processes", {})).get("namespace", True)),  # type: ignore[call-overload]
        user_id=user_id,
        user_per_process=not trusted,
        user_refused=refused,
        own=tuple(os.path.realpath(path) for path in [worker, *writable]),
        processes=int(limits.get("processes", 0)),
        # Counted for each process of the worker, over all its threads: a budget of every CPU of the machine.
        cpu_seconds=int(float(limits.get("cpu_hours", 0)) * 3600 * (os.cpu_count() or 1)),
    )


def syscall_rules(table: Iterable[Mapping[str, Any]], platform: str | None = None) -> tuple[SyscallRule, ...]:
    """The `[[syscall_rules]]` of sandbox.toml (or of its run phase) with their names resolved: those that hold
    on `platform` (a rule naming no platforms holds on all; `platform` None keeps every rule)."""
    resolved = []
    for rule in table:
        platforms = list(rule.get("platforms", []))
        if platform is not None and platforms and platform not in platforms:
            continue
        resolved.append(SyscallRule(
            calls=tuple(rule["calls"]),
            error=int(getattr(errno, str(rule.get("errno", "EPERM")))),
            arg=int(rule.get("arg", 0)),
            any_bits=_flags(rule.get("any_flag", [])),
            no_bits=_flags(rule.get("no_flag", [])),
        ))
    return tuple(resolved)


def run_phase_rules(language: str | None, platform: str) -> tuple[SyscallRule, ...]:
    """What a worker refuses once a candidate in `language` is loaded on `platform` (sandbox.toml [run_phase]):
    nothing for a language the phase does not name, or an unknown one."""
    phase = dict(rules().get("run_phase", {}))  # type: ignore[call-overload]
    if language is None or language not in phase.get("languages", []):
        return ()
    return syscall_rules(phase.get("syscall_rules", []), platform)


def _flags(names: Iterable[str]) -> int:
    value = 0
    for name in names:
        value |= CLONE_FLAGS[name]
    return value


def worker_search_path(path: str) -> str:
    """The worker's PATH: ninja's own folder first (a version manager's `ninja` shim would need a shell and the
    manager's files, which the sandbox refuses)."""
    folders = machine_values().get("ninja_dir", [])
    return os.pathsep.join([*folders, *(part for part in path.split(os.pathsep) if part not in folders)])


@functools.lru_cache(maxsize=1)
def machine_values() -> dict[str, list[str]]:
    """What each placeholder stands for on this machine (a list: some stand for several paths)."""
    values = {
        "python_prefix": [sys.prefix],
        "python_base_prefix": [sys.base_prefix],
        "python_executable": [sys.executable],
        "site_packages": [*site.getsitepackages(), site.getusersitepackages()],
        "kforge_root": [str(Path(kforge.__file__).resolve().parent.parent)],
        "cuda_home": _cuda_home(),
        "gcc_libexec": _gcc_libexec(),
        "compiler_prefix": _compiler_prefixes(),
        "ninja_dir": _ninja_dir(),
    }
    return {key: [value for value in found if value] for key, found in values.items()}


def _paths(table: Mapping[str, object], section: str, values: Mapping[str, list[str]]) -> tuple[str, ...]:
    found: list[str] = []
    for rule in table.get(section, []):  # type: ignore[attr-defined]
        for pattern in rule.get("paths", []):
            for expanded in _expand(pattern, values):
                found.extend(match for match in sorted(glob.glob(expanded)) if os.path.exists(match))
    # /proc/self stays as it is: it must name the worker's own process, so the worker resolves it.
    return tuple(dict.fromkeys(path if path.startswith("/proc/self") else os.path.realpath(path) for path in found))


def _expand(pattern: str, values: Mapping[str, list[str]]) -> list[str]:
    """Every way of filling `pattern`'s placeholders; none when one has no value here."""
    if "{" not in pattern:
        return [pattern]
    name = pattern[pattern.index("{") + 1:pattern.index("}")]
    return [filled for value in values.get(name, [])
            for filled in _expand(pattern.replace("{" + name + "}", value, 1), values)]


def _programs(table: Mapping[str, object], search: str) -> tuple[str, ...]:
    found = []
    for rule in table.get("programs", []):  # type: ignore[attr-defined]
        for name in rule.get("names", []):
            located = shutil.which(name, path=search)
            if located:
                found.append(os.path.realpath(located))
    return tuple(dict.fromkeys(found))


def _cuda_home() -> list[str]:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if not home:
        nvcc = shutil.which("nvcc")
        home = str(Path(os.path.realpath(nvcc)).parent.parent) if nvcc else None
    return [home] if home and os.path.isdir(home) else []


def _gcc_libexec() -> list[str]:
    compiler = shutil.which(os.environ.get("CXX", "c++"))
    if not compiler:
        return []
    try:
        named = subprocess.run([compiler, "-print-prog-name=cc1plus"], capture_output=True, text=True,
                               timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(Path(named).parent)] if os.path.isabs(named) else []


def _compiler_prefixes() -> list[str]:
    """The installation folder of each compiler $CXX or $CC names, where it lies outside the system's folders
    (e.g. /opt/gcc for /opt/gcc/bin/g++)."""
    found = []
    for name in (os.environ.get("CXX"), os.environ.get("CC")):
        located = shutil.which(name) if name else None
        if located:
            prefix = Path(os.path.realpath(located)).parent.parent
            if str(prefix) not in ("/", "/usr", "/usr/local"):
                found.append(str(prefix))
    return found


def _ninja_dir() -> list[str]:
    """The folder of the `ninja` program: the PyPI package's (a dependency of kforge), which names none from a
    virtual environment that sees it in the base interpreter's site-packages; then the base interpreter's
    scripts; then the PATH's."""
    try:
        import ninja

        folders = [str(ninja.BIN_DIR or "")]
    except (ImportError, AttributeError):
        folders = []
    folders.append(sysconfig.get_path("scripts", vars={"base": sys.base_prefix, "platbase": sys.base_prefix}))
    for folder in folders:
        if folder and os.access(Path(folder) / "ninja", os.X_OK):
            return [folder]
    located = shutil.which("ninja")
    return [str(Path(os.path.realpath(located)).parent)] if located else []
