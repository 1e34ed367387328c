"""The unprivileged user a worker runs as when the harness is root (issue 38, least privilege).

A worker of a root harness (CI, containers, the GPU machines) used to stay uid 0 with its capabilities dropped.
Such a process still owns every root-owned file: wherever Landlock is missing it could rewrite any of them whose
owner may write it (most of /etc, root's home, the project). So the worker becomes a user of its own before it
confines itself further (verify/confine.py), a user that owns nothing outside the worker:

- a candidate's worker, and a build worker, takes the id BASE + its process id (as the harness sees it): no two
  workers alive at once share it, so no candidate owns another's files or processes, and RLIMIT_NPROC counts one
  worker's processes alone;
- the reference's workers take BASE itself (no process has id 0): their compiler caches outlive each of them.

The group id is the same number. BASE is 2,000,000,000 unless KFORGE_WORKER_UID names another (0 keeps workers
uid 0 without capabilities, reported as missing). BASE .. BASE + 2**22 (the largest process id Linux allows) lies
in a block systemd's users and groups document leaves unused (1879048192-2147352575), above accounts and the
subordinate ids of rootless containers; the harness refuses the range when /etc/passwd or /etc/group names an id
in it.

Before it switches, still root, the worker takes what it must write (its directory, the reference's caches) and,
where a folder on the way to what it must read or run is closed to other users (root's home, mode 0700, holding
the interpreter), makes that folder passable in its own mount namespace: a tmpfs over it, of the same owner and
mode but searchable by everyone, holding the folder's entries bound in as they are. Nothing changes outside the
worker's namespace, and Landlock still decides what the worker may open.

Only the standard library: this runs in the worker before torch is imported.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path

VARIABLE = "KFORGE_WORKER_UID"
DEFAULT_BASE = 2_000_000_000
_PID_LIMIT = 1 << 22  # PID_MAX_LIMIT on 64-bit Linux: every process id is below it
_LARGEST_ID = (1 << 32) - 2  # (uid_t)-1 means "unchanged" to the set*id calls
_MOST_ENTRIES = 1000  # in a folder made passable: each is one mount in every worker's start
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC = 0x2, 0x4, 0x1000, 0x4000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_SIGKILL = 9


# ---- the harness's side: which ids -------------------------------------------------------------------------
def planned_base() -> tuple[int | None, str]:
    """The base of the ids this harness's workers take, or None and why not (an empty reason where the harness is
    not root: its workers run as its own user, which owns what the user owns anyway)."""
    if os.geteuid() != 0:
        return None, ""
    text = os.environ.get(VARIABLE, "").strip()
    try:
        base = int(text) if text else DEFAULT_BASE
    except ValueError:
        return None, f"{VARIABLE}={text[:40]!r} is not a number"
    if base == 0:
        return None, f"switched off ({VARIABLE}=0)"
    if not 0 < base <= _LARGEST_ID - _PID_LIMIT:
        return None, f"{VARIABLE}={base} leaves no room for {_PID_LIMIT} ids below {_LARGEST_ID + 1}"
    taken = sorted(known_ids() & set(range(base, base + _PID_LIMIT + 1)))
    if taken:
        return None, (f"id {taken[0]} of /etc/passwd or /etc/group lies in {base}..{base + _PID_LIMIT}; set "
                      f"{VARIABLE} to the first of {_PID_LIMIT + 1} free ids")
    return base, ""


@functools.lru_cache(maxsize=1)
def known_ids() -> frozenset[int]:
    """Every user and group id /etc/passwd and /etc/group name (their third field)."""
    found: set[int] = set()
    for table in ("/etc/passwd", "/etc/group"):
        try:
            lines = Path(table).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.split(":")
            if len(fields) > 2 and fields[2].isdigit():
                found.add(int(fields[2]))
    return frozenset(found)


def worker_id(base: int, per_process: bool, pid: int) -> int:
    """The user (and group) id of a worker: `base` + its process id, or `base` for the reference's workers."""
    return base + pid if per_process else base


# ---- the worker's side, still root: what it owns, and the way to what it reads ------------------------------
def take_ownership(paths: Iterable[str], uid: int, gid: int) -> None:
    """Give each of `paths`, and everything beneath it not yet given, to uid:gid; links are changed, never
    followed. A folder is given after its contents, so that a walk cut short is walked again next time, and a
    folder given already is not walked (its contents were made by its owner)."""
    for path in paths:
        _own(path, uid, gid)


def _own(path: str, uid: int, gid: int) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if (info.st_uid, info.st_gid) == (uid, gid):
        return
    if stat.S_ISDIR(info.st_mode):
        with os.scandir(path) as entries:
            for entry in entries:
                _own(entry.path, uid, gid)
    os.chown(path, uid, gid, follow_symlinks=False)


def closed_folders(paths: Iterable[str], uid: int, groups: Iterable[int]) -> list[str]:
    """The folders on the way to `paths` (each path itself too, where it is a folder) that the user `uid` with
    the groups `groups` could not pass by their modes, outermost first. Seen by root, so any folder can be
    looked at; ACLs are not read (a folder one opens is passable already, so this errs towards passing)."""
    member = set(groups)
    closed: set[str] = set()
    for path in paths:
        parts = Path(path).parts
        for depth in range(2, len(parts) + 1):
            folder = os.path.join(*parts[:depth])
            try:
                info = os.stat(folder)
            except OSError:
                break
            if not stat.S_ISDIR(info.st_mode):
                break
            if not _passable(info, uid, member):
                closed.add(folder)
    return sorted(closed, key=lambda folder: (len(Path(folder).parts), folder))


def _passable(info: os.stat_result, uid: int, groups: set[int]) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid in groups:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def make_passable(folder: str) -> None:
    """Cover `folder`, in this process's mount namespace (which must be private: the caller's), with a tmpfs of
    its owner and its mode plus search for everyone, holding each of its entries bound in as it is (folders and
    files; links copied; sockets and devices left out). Listing it stays refused to whoever could not list it.
    Raises OSError."""
    info = os.stat(folder)
    names = os.listdir(folder)
    handle = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # the folder beneath, once covered
    try:
        if len(names) > _MOST_ENTRIES:
            raise OSError(f"{folder} holds {len(names)} entries (at most {_MOST_ENTRIES} are bound into a worker)")
        mode = (info.st_mode & 0o7777) | 0o111
        _mount(b"tmpfs", folder, b"tmpfs", _MS_NOSUID | _MS_NODEV,
               f"mode={mode:o},uid={info.st_uid},gid={info.st_gid},size=1m".encode())
        for name in names:
            _bind(f"/proc/self/fd/{handle}/{name}", os.path.join(folder, name))
    finally:
        os.close(handle)


def _bind(source: str, target: str) -> None:
    kind = os.lstat(source).st_mode
    if stat.S_ISLNK(kind):
        os.symlink(os.readlink(source), target)
        return
    if stat.S_ISDIR(kind):
        os.mkdir(target)
    elif stat.S_ISREG(kind):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    else:
        return
    _mount(source.encode(), target, None, _MS_BIND | _MS_REC, None)


def _mount(source: bytes, target: str, kind: bytes | None, flags: int, data: bytes | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(source, target.encode(), kind, flags, data) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"mounting over {target}: {os.strerror(number)}")


def device_groups(devices: Iterable[str]) -> list[int]:
    """The groups owning the device nodes a worker may use (video and render, where a GPU's nodes are not open to
    all), which it keeps as supplementary groups; never root's group."""
    groups: set[int] = set()
    for device in devices:
        try:
            nodes = [device, *(str(entry) for entry in Path(device).iterdir())] if os.path.isdir(device) else [device]
        except OSError:
            continue
        for node in nodes:
            try:
                groups.add(os.stat(node).st_gid)
            except OSError:
                continue
    return sorted(groups - {0})


def switch(uid: int, gid: int, groups: list[int]) -> None:
    """Become uid:gid with `groups`, for good: real, effective and saved ids alike, so every capability goes (the
    kernel clears them when a process leaves uid 0). Raises OSError."""
    os.setgroups(groups)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    # Leaving uid 0 marks the process undumpable, which gives its /proc entries to root: the worker could no
    # longer write its own (the CUDA driver does). Core dumps stay off (RLIMIT_CORE 0).
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    # The change of ids cleared the signal that kills the worker with its parent.
    libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    # No program it starts may gain privileges (a set-user-id root program would own root's files again); Landlock
    # and seccomp set this too, but hold only where the kernel has them.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"no_new_privs: {os.strerror(number)}")
