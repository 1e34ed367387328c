"""The build store: what candidates' workers compiled, kept by the harness alone and keyed by the candidate's source.

Why it exists: a C++ build takes 40-60 s on a small machine and a CUDA one a minute, so evaluating a candidate seen
before must not compile it again. But a cache that candidates' workers write is a cache a candidate can poison
(issue 38: one swapped its library into another's build folder, and the honest candidate's next evaluation, and its
export, loaded it). So no worker writes here, or reads here. A candidate builds in its own throw-away directory
(verify/worker_layout.py); once that worker is dead, the harness copies what a later load reads (`KEPT`: each
extension's library, Triton's compiled kernels) into this store, hashing every file as it copies it, and records
the hashes in a manifest of its own. Before a later worker of the same candidate loads it, the harness copies the
files back into that worker's directory, checking each against its recorded hash as it reads it; a file that does
not match drops the whole entry, and the candidate builds again.

The key is the candidate's whole source text (with torch, Python and the processor), not only what it compiles:
the builtin engine emits deterministic C++, so two candidates often compile the same extension, and whatever one
of them leaves in its own directory must never be loaded for the other.

Files are read without following links (each opened with O_NOFOLLOW relative to its folder, then checked with
fstat on the open descriptor: regular, one link, within the size caps), and what is hashed is exactly what is
copied, so a process of the worker that outlived it cannot swap a file between the check and the copy.

Layout under the root, `<cache>/artifacts`:

    objects/<sha256[:2]>/<sha256>   file contents, named by their hash (entries holding the same file share it)
    entries/<key>.json              one candidate's manifest: {"format": 1, "files": {"<path in the worker's
                                    directory>": {"sha256", "size", "mtime_ns", "mode"}}}

Each file is written under a temporary name and renamed into place, so readers never see half a file; two
processes storing the same candidate at once each write a whole entry, and the later one stays.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

from kforge.verify.extension_cache import machine_identity
from kforge.verify.worker_layout import BUILDS, KEPT, KeptTree

_FORMAT = 1
# A library with device code for several architectures stays far below these; a candidate filling its directory
# with junk costs at most this much disk and reading time.
MAX_FILE_BYTES = 512 << 20
MAX_INGEST_BYTES = 1 << 30
MAX_FILES = 1000
_MAX_LISTED = 10 * MAX_FILES  # names read from one folder: a million planted entries must not stall the harness
_CHUNK = 1 << 20
_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,254}")  # no leading dot, no separator: never "." or ".."
_KEY = re.compile(r"[0-9a-f]{64}")
_LIBRARY_SUFFIXES = (".so", ".pyd")
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_OPEN_DIRECTORY = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class StoreMismatch(Exception):
    """A stored file does not match the hash the harness recorded for it (changed or lost on disk)."""


@dataclass(frozen=True)
class StoredFile:
    """One file of an entry, as the harness recorded it when it copied the file in."""

    sha256: str
    size: int
    mtime_ns: int
    mode: int


@dataclass(frozen=True)
class Restored:
    """What `restore` put into a worker's directory: each file's path there and its (size, mtime_ns) as written,
    so that `ingest` can tell files the worker left alone from files it built or changed; `dropped` says why an
    entry was dropped instead (a file that failed its hash check), empty otherwise."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    dropped: str = ""


def artifact_key(source: str) -> str:
    """The store's key for a candidate: its whole source text, and the torch, Python and processor it is built
    with (a library built for one of them is no use to another)."""
    described = {"format": _FORMAT, "source": source, **_build_environment()}
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _build_environment() -> dict[str, object]:
    import torch

    return {"torch": torch.__version__, "python": sys.version, "machine": machine_identity()}


class ArtifactStore:
    """The store under `root`; only the harness's own process uses it (no worker is given its path)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def under(cls, cache: Path) -> ArtifactStore:
        """The store of kforge's cache folder `cache`."""
        return cls(cache / "artifacts")

    # ---- worker's directory <-> store -----------------------------------------------------------------------
    def restore(self, key: str, directory: Path, owner: tuple[int, int] | None = None) -> Restored:
        """Copy the entry `key` into a worker's `directory`, checking every file's hash as it is read, with its
        recorded time and mode; folders made and files written are given to `owner` (the worker's user and group,
        `Worker.owner`), so that its worker may rebuild or add to them. A file that fails the check drops the entry
        and takes back what was copied: the worker then builds as if nothing were stored."""
        files = self._read_entry(key)
        written: dict[str, tuple[int, int]] = {}
        try:
            for relative, stored in sorted((files or {}).items()):
                _make_folders(directory, relative.split("/")[:-1], owner)
                self._copy_out(stored, directory / relative, owner)
                written[relative] = (stored.size, stored.mtime_ns)
        except StoreMismatch as mismatch:
            for relative in written:
                (directory / relative).unlink(missing_ok=True)
            self.drop(key)
            return Restored(dropped=str(mismatch))
        return Restored(written)

    def ingest(self, key: str, directory: Path, restored: Restored | None = None) -> int:
        """Copy the files a dead worker left in `directory` that a later load reads (`KEPT`) into the entry `key`,
        hashing each as it is copied; files `restored` put there and the worker left unchanged are not read again.
        Returns how many files were stored."""
        unchanged = restored.files if restored is not None else {}
        found: dict[str, StoredFile] = {}
        total = 0
        for relative, stream, info in _kept_files(directory):
            with stream:
                if unchanged.get(relative) == (info.st_size, info.st_mtime_ns):
                    continue
                if len(found) >= MAX_FILES or total + info.st_size > MAX_INGEST_BYTES:
                    continue
                stored = self._put(stream, info)
            if stored is not None:
                found[relative] = stored
                total += stored.size
        if found:
            self._write_entry(key, {**(self._read_entry(key) or {}), **found})
        return len(found)

    def drop(self, key: str) -> None:
        """Forget the entry `key` (its objects stay for other entries that hold the same files)."""
        self._entry_path(key).unlink(missing_ok=True)

    # ---- export -----------------------------------------------------------------------------------------------
    def copy_libraries(self, key: str, destination: Path) -> list[tuple[str, str]]:
        """Copy the extension libraries of entry `key` to `destination/<build folder>/<file>`, checking each
        file's hash as it is read; returns the (build folder, file name) of each. StoreMismatch, with the entry
        dropped and nothing left copied, when a file fails the check."""
        files = self._read_entry(key) or {}
        copied: list[tuple[str, str]] = []
        try:
            for relative, stored in sorted(files.items()):
                parts = relative.split("/")
                if len(parts) != 3 or parts[0] != BUILDS or not parts[2].endswith(_LIBRARY_SUFFIXES):
                    continue
                self._copy_out(stored, destination / parts[1] / parts[2])
                copied.append((parts[1], parts[2]))
        except StoreMismatch:
            for folder, name in copied:
                (destination / folder / name).unlink(missing_ok=True)
            self.drop(key)
            raise
        return copied

    # ---- files --------------------------------------------------------------------------------------------------
    def _entry_path(self, key: str) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a store key: {key!r}")
        return self.root / "entries" / f"{key}.json"

    def _object_path(self, digest: str) -> Path:
        return self.root / "objects" / digest[:2] / digest

    def _read_entry(self, key: str) -> dict[str, StoredFile] | None:
        """The entry's files, or None when there is none; an entry that does not read as one is dropped."""
        try:
            raw = json.loads(self._entry_path(key).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self.drop(key)
            return None
        try:
            if raw["format"] != _FORMAT:
                raise ValueError("another format")
            files = {str(relative): StoredFile(sha256=str(record["sha256"]), size=int(record["size"]),
                                               mtime_ns=int(record["mtime_ns"]), mode=int(record["mode"]))
                     for relative, record in raw["files"].items()}
            if not all(_kept(relative) and _KEY.fullmatch(stored.sha256) for relative, stored in files.items()):
                raise ValueError("a path or hash out of place")
        except (KeyError, TypeError, ValueError, AttributeError):
            self.drop(key)
            return None
        return files

    def _write_entry(self, key: str, files: dict[str, StoredFile]) -> None:
        text = json.dumps({"format": _FORMAT, "files": {relative: asdict(stored)
                                                        for relative, stored in sorted(files.items())}}, indent=1)
        path = self._entry_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
        try:
            with os.fdopen(descriptor, "w") as out:
                out.write(text + "\n")
            os.replace(temporary, path)
        finally:
            Path(temporary).unlink(missing_ok=True)

    def _put(self, stream: BinaryIO, info: os.stat_result) -> StoredFile | None:
        """Store the open file `stream` under its hash; None when it grew past the size cap while read."""
        objects = self.root / "objects"
        objects.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=objects, prefix=".incoming-")
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(descriptor, "wb") as out:
                while chunk := stream.read(_CHUNK):
                    size += len(chunk)
                    if size > MAX_FILE_BYTES:
                        return None
                    digest.update(chunk)
                    out.write(chunk)
            name = digest.hexdigest()
            target = self._object_path(name)
            target.parent.mkdir(exist_ok=True)
            os.chmod(temporary, 0o644)
            os.replace(temporary, target)  # the same content again, or the repair of a damaged copy
            return StoredFile(sha256=name, size=size, mtime_ns=info.st_mtime_ns, mode=stat.S_IMODE(info.st_mode))
        finally:
            Path(temporary).unlink(missing_ok=True)

    def _copy_out(self, stored: StoredFile, target: Path, owner: tuple[int, int] | None = None) -> None:
        """Copy one stored file to `target` (replacing what is there; given to `owner` where one is named), checking
        its hash on the bytes copied; StoreMismatch, with the damaged object removed, when they do not match."""
        source = self._object_path(stored.sha256)
        try:
            descriptor = os.open(source, _OPEN_FILE)
        except OSError as exc:
            raise StoreMismatch(f"{target.name}: its stored copy cannot be read ({exc.strerror})") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.restoring")
        try:
            with os.fdopen(descriptor, "rb") as stream:
                info = os.fstat(stream.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size != stored.size:
                    source.unlink(missing_ok=True)
                    raise StoreMismatch(f"{target.name}: its stored copy changed size on disk")
                digest = hashlib.sha256()
                out_descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                if owner is not None:
                    os.fchown(out_descriptor, *owner)
                with os.fdopen(out_descriptor, "wb") as out:
                    while chunk := stream.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
            if digest.hexdigest() != stored.sha256:
                source.unlink(missing_ok=True)
                raise StoreMismatch(f"{target.name}: its stored copy does not match the hash recorded when it was "
                                    "stored (changed on disk)")
            os.chmod(temporary, stored.mode & 0o755)
            os.utime(temporary, ns=(stored.mtime_ns, stored.mtime_ns))
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)


def _make_folders(directory: Path, parts: list[str], owner: tuple[int, int] | None) -> None:
    """The folders `parts` beneath `directory`, one inside the next; those made here are given to `owner`. (Before
    its candidate loads, a worker's directory holds only what its own code and the harness put there.)"""
    directory.mkdir(parents=True, exist_ok=True)
    folder = directory
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        if owner is not None:
            os.chown(folder, *owner, follow_symlinks=False)


def _kept(relative: str) -> bool:
    """Whether `relative` names a file the store keeps: inside a `KEPT` tree, every part a plain name."""
    return all(_NAME.fullmatch(part) for part in relative.split("/")[1:]) and any(
        tree.holds(relative) for tree in KEPT)


def _kept_files(directory: Path) -> Iterator[tuple[str, BinaryIO, os.stat_result]]:
    """Each file of a worker's `directory` that `KEPT` names, opened: (its path there, the open file, fstat of
    it). Links are never followed, and only regular files with one link are given (a hard link could bring in a
    file from elsewhere on the same file system); the caller closes each file."""
    for tree in KEPT:
        root = _open_folder(directory, tree.path.split("/"))
        if root is None:
            continue
        try:
            yield from _walk(root, tree.path, tree, tree.depth)
        finally:
            os.close(root)


def _open_folder(directory: Path, parts: list[str]) -> int | None:
    try:
        descriptor = os.open(directory, _OPEN_DIRECTORY)
    except OSError:
        return None
    for part in parts:
        try:
            inner = os.open(part, _OPEN_DIRECTORY, dir_fd=descriptor)
        except OSError:
            os.close(descriptor)
            return None
        os.close(descriptor)
        descriptor = inner
    return descriptor


def _walk(folder: int, prefix: str, tree: KeptTree, depth: int) -> Iterator[tuple[str, BinaryIO, os.stat_result]]:
    with os.scandir(folder) as listing:
        names = sorted(entry.name for entry in itertools.islice(listing, _MAX_LISTED))
    for name in names:
        if not _NAME.fullmatch(name):
            continue
        try:
            descriptor = os.open(name, _OPEN_FILE, dir_fd=folder)
        except OSError:  # a link (ELOOP), gone, or unreadable
            continue
        info = os.fstat(descriptor)
        relative = f"{prefix}/{name}"
        if stat.S_ISDIR(info.st_mode) and depth > 1:
            try:
                yield from _walk(descriptor, relative, tree, depth - 1)
            finally:
                os.close(descriptor)
        elif (stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_size <= MAX_FILE_BYTES
              and tree.holds(relative)):
            yield relative, os.fdopen(descriptor, "rb"), info
        else:
            os.close(descriptor)
