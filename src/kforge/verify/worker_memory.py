"""What a worker holds in memory, read by the harness from outside (issue 38: memory, tmpfs included).

A worker's directory lives in RAM where the machine has a usable /dev/shm (verify/sandbox.py), so a file it
writes there is memory as much as what it allocates, and no resident-set figure counts it: RLIMIT_FSIZE caps each
file at the memory limit, but not how many. So the harness's watch adds up, once a second:

- the resident memory of every process of the worker;
- the files in its directory, each by the blocks it occupies (a sparse file costs what it holds);
- the files its processes keep open after removing their names, which stay in RAM in no directory.

A file with several names, or open as well as named, counts once. The directory is walked beneath the
descriptor the harness opened before the worker existed, never through a link. The walk and the count of open
files are capped: a worker past either cap is judged over its limit, since each entry costs the kernel memory
and every one costs the harness time while it watches a kernel being timed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import psutil

MAX_ENTRIES = 20_000  # files and folders in a worker's directory; an honest one holds tens
MAX_DESCRIPTORS = 4096  # open in one process of the worker; honest ones stay below the usual soft limit of 1024
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Held:
    """A worker's memory at one reading: resident bytes, bytes of its files, and why counting stopped short
    (a cap passed), if it did."""

    resident: int
    files: int
    too_many: str = ""

    def over(self, limit: int) -> bool:
        return bool(self.too_many) or self.resident + self.files > limit

    def describe(self) -> str:
        if self.too_many:
            return self.too_many
        return f"resident {self.resident >> 20} MiB, files {self.files >> 20} MiB"


def held(pid: int, directory_fd: int) -> Held | None:
    """What the worker `pid` (and every process beneath it) holds, its directory open as `directory_fd`; None
    when it ended while it was read."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
        resident = sum(process.memory_info().rss for process in processes)
    except psutil.Error:
        return None
    device = os.fstat(directory_fd).st_dev
    seen: set[tuple[int, int]] = set()
    files, too_many = _directory_bytes(directory_fd, seen)
    if not too_many:
        unnamed, too_many = _unnamed_bytes([process.pid for process in processes], device, seen)
        files += unnamed
    return Held(resident, files, too_many)


def _directory_bytes(directory_fd: int, seen: set[tuple[int, int]]) -> tuple[int, str]:
    """The bytes of every file beneath the directory, and why the walk stopped short, if it did."""
    total, entries = 0, 0
    folders = [os.dup(directory_fd)]
    try:
        while folders:
            folder = folders.pop()
            try:
                with os.scandir(folder) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > MAX_ENTRIES:
                            return total, f"more than {MAX_ENTRIES} files and folders in its directory"
                        total += _entry_bytes(entry, folder, folders, seen)
            except OSError:
                continue  # removed while it was walked
            finally:
                os.close(folder)
    finally:
        for folder in folders:
            os.close(folder)
    return total, ""


def _entry_bytes(entry: os.DirEntry[str], folder: int, folders: list[int], seen: set[tuple[int, int]]) -> int:
    """One entry's bytes; a folder is opened (without following a link) and queued to be walked."""
    try:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            folders.append(os.open(entry.name, _DIRECTORY, dir_fd=folder))
    except OSError:
        return 0  # gone, or replaced by a link since it was listed
    return _blocks(info, seen)


def _unnamed_bytes(pids: list[int], device: int, seen: set[tuple[int, int]]) -> tuple[int, str]:
    """The bytes of the regular files on the directory's file system that the processes `pids` hold open with no
    name left, and why the count stopped short, if it did."""
    total = 0
    for pid in pids:
        try:
            with os.scandir(f"/proc/{pid}/fd") as descriptors:
                for count, descriptor in enumerate(descriptors):
                    if count >= MAX_DESCRIPTORS:
                        return total, f"more than {MAX_DESCRIPTORS} files open in one of its processes"
                    try:
                        info = os.stat(descriptor.path)  # the open file itself, not the link naming it
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and info.st_dev == device:
                        total += _blocks(info, seen)
        except OSError:
            continue  # the process ended
    return total, ""


def _blocks(info: os.stat_result, seen: set[tuple[int, int]]) -> int:
    key = (info.st_dev, info.st_ino)
    if key in seen:
        return 0
    seen.add(key)
    return info.st_blocks * 512
