"""The build store (verify/artifact_store.py) on its own, with fake worker directories: what it keeps, that it checks
every file it gives back, and that nothing a worker left can make it read or copy a file from elsewhere."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from kforge.verify import artifact_store
from kforge.verify.artifact_store import ArtifactStore, StoreMismatch, artifact_key

KEY = artifact_key("candidate A")
LIBRARY = "builds/ext-0123/ext.so"
KERNEL = "caches/triton/ABCDEF/kernel.cubin"


def worker_directory(root: Path, files: dict[str, bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def built(tmp_path: Path, name: str = "worker") -> Path:
    """A worker's directory after a build: a library, ninja's leftovers, Triton's and Inductor's caches."""
    return worker_directory(tmp_path / name, {
        LIBRARY: b"\x7fELF library", "builds/ext-0123/main.o": b"object", "builds/ext-0123/build.ninja": b"rule",
        KERNEL: b"cubin", "caches/triton/ABCDEF/__grp__kernel.json": b"{}", "caches/inductor/code.py": b"x = 1",
        "run-1.pt": b"outputs"})


def stored_objects(store: ArtifactStore) -> list[Path]:
    return sorted(path for path in (store.root / "objects").rglob("*") if path.is_file())


def test_what_a_later_load_reads_is_kept_and_comes_back_as_it_was(tmp_path: Path) -> None:
    store = ArtifactStore.under(tmp_path / "cache")
    worker = built(tmp_path)
    os.utime(worker / LIBRARY, ns=(1_000_000_000, 1_234_567_890_123))
    assert store.ingest(KEY, worker) == 3  # the library, and Triton's two files; no objects, nothing of Inductor's

    fresh = tmp_path / "next-worker"
    restored = store.restore(KEY, fresh)
    assert sorted(restored.files) == sorted([LIBRARY, KERNEL, "caches/triton/ABCDEF/__grp__kernel.json"])
    assert (fresh / LIBRARY).read_bytes() == b"\x7fELF library"
    assert (fresh / LIBRARY).stat().st_mtime_ns == 1_234_567_890_123  # ninja's clocks, kept
    assert not (fresh / "builds/ext-0123/main.o").exists() and not (fresh / "caches/inductor").exists()
    assert store.copy_libraries(KEY, tmp_path / "export") == [("ext-0123", "ext.so")]
    assert (tmp_path / "export/ext-0123/ext.so").read_bytes() == b"\x7fELF library"


def test_the_key_is_the_whole_source_not_what_it_compiles(tmp_path: Path) -> None:
    store = ArtifactStore.under(tmp_path / "cache")
    cpp = 'CPP = "torch::Tensor f(torch::Tensor x) { return x; }"\n'
    honest, other = artifact_key(cpp + "class ModelNew: ...\n"), artifact_key(cpp + "class ModelNew: pass\n")
    assert honest != other
    store.ingest(other, built(tmp_path))  # the other candidate's worker left a library in the same build folder
    assert store.restore(honest, tmp_path / "honest").files == {}
    assert not (tmp_path / "honest" / LIBRARY).exists()


def test_files_left_unchanged_since_the_restore_are_not_read_again(tmp_path: Path) -> None:
    store = ArtifactStore.under(tmp_path / "cache")
    store.ingest(KEY, built(tmp_path))
    worker = tmp_path / "next-worker"
    restored = store.restore(KEY, worker)
    assert store.ingest(KEY, worker, restored) == 0
    (worker / LIBRARY).write_bytes(b"rebuilt")  # built again in that worker: kept
    assert store.ingest(KEY, worker, restored) == 1
    store.restore(KEY, tmp_path / "third")
    assert (tmp_path / "third" / LIBRARY).read_bytes() == b"rebuilt"


def test_a_file_changed_in_the_store_drops_the_entry_and_nothing_of_it_is_given(tmp_path: Path) -> None:
    store = ArtifactStore.under(tmp_path / "cache")
    store.ingest(KEY, built(tmp_path))
    library = store._object_path(hashlib.sha256(b"\x7fELF library").hexdigest())
    library.write_bytes(b"\x7fELF swapped")  # same size: only the hash tells
    restored = store.restore(KEY, tmp_path / "next-worker")
    assert restored.files == {} and "does not match the hash recorded" in restored.dropped
    assert not any(path.is_file() for path in (tmp_path / "next-worker").rglob("*"))
    assert not library.exists(), "the damaged object is removed, so the next build stores it afresh"
    assert store.restore(KEY, tmp_path / "again").files == {}  # the entry is gone: the worker builds

    store.ingest(KEY, built(tmp_path, "rebuilt"))
    library.write_bytes(b"\x7fELF swapped library")  # another size
    with pytest.raises(StoreMismatch, match="changed size"):
        store.copy_libraries(KEY, tmp_path / "export")
    assert not any(path.is_file() for path in (tmp_path / "export").rglob("*"))


def test_links_fifos_and_hard_links_are_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "credentials"
    secret.parent.mkdir()
    secret.write_bytes(b"planted secret")
    worker = tmp_path / "worker"
    folder = worker / "builds" / "ext-0123"
    folder.mkdir(parents=True)
    (folder / "ext.so").symlink_to(secret)
    os.link(secret, folder / "hard.so")
    os.mkfifo(folder / "fifo.so")
    (worker / "builds" / "linked").symlink_to(secret.parent, target_is_directory=True)
    (worker / "caches").mkdir()
    (worker / "caches" / "triton").symlink_to(secret.parent, target_is_directory=True)
    store = ArtifactStore.under(tmp_path / "cache")
    assert store.ingest(KEY, worker) == 0
    assert not any(b"planted secret" in path.read_bytes() for path in stored_objects(store))


def test_files_over_the_cap_and_odd_names_are_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(artifact_store, "MAX_FILE_BYTES", 100)
    worker = worker_directory(tmp_path / "worker", {"builds/big-1/big.so": b"x" * 101, "builds/ok-1/.hidden.so": b"x",
                                                    "builds/ok-1/ok.so": b"x" * 100})
    store = ArtifactStore.under(tmp_path / "cache")
    assert store.ingest(KEY, worker) == 1
    assert list(store.restore(KEY, tmp_path / "next").files) == ["builds/ok-1/ok.so"]


def test_a_manifest_that_names_a_path_outside_is_dropped(tmp_path: Path) -> None:
    store = ArtifactStore.under(tmp_path / "cache")
    store.ingest(KEY, built(tmp_path))
    entry = store._entry_path(KEY)
    entry.write_text(entry.read_text().replace(LIBRARY, "builds/../../escaped.so"))
    assert store.restore(KEY, tmp_path / "next").files == {}
    assert not entry.exists() and not (tmp_path / "escaped.so").exists()
