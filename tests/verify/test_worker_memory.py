"""A worker's memory as the harness reads it (verify/worker_memory.py, issue 38: memory, tmpfs included): its
resident memory and the files it keeps in its RAM-backed directory, named or held open without a name."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kforge.verify import worker_memory
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options

LEAKY = PROBLEMS / "leaky_scale.py"


def test_files_count_once_by_what_they_hold_and_no_link_is_followed(tmp_path: Path) -> None:
    directory, outside = tmp_path / "worker", tmp_path / "outside"
    (directory / "builds").mkdir(parents=True)
    outside.mkdir()
    (directory / "builds" / "named.bin").write_bytes(b"x" * (3 << 20))
    os.link(directory / "builds" / "named.bin", directory / "second-name.bin")  # one file, two names
    with open(directory / "sparse.bin", "wb") as sparse:
        sparse.truncate(1 << 30)  # a gigabyte that holds nothing
    (outside / "big.bin").write_bytes(b"y" * (5 << 20))
    (directory / "link").symlink_to(outside / "big.bin")
    (directory / "folder-link").symlink_to(outside)
    unnamed = open(directory / "unnamed.bin", "wb")  # noqa: SIM115 (held open, its name removed)
    unnamed.write(b"z" * (2 << 20))
    unnamed.flush()
    os.unlink(directory / "unnamed.bin")
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        held = worker_memory.held(os.getpid(), descriptor)
    finally:
        os.close(descriptor)
        unnamed.close()
    assert held is not None and held.too_many == ""
    assert 5 << 20 <= held.files < (5 << 20) + (1 << 20), held  # 3 MiB named twice, 2 MiB unnamed, no more
    assert held.resident > 0 and held.over(held.resident + (4 << 20)) and not held.over(1 << 40)


def test_too_many_entries_count_as_over_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in range(30):
        (tmp_path / f"empty-{index}").touch()
    monkeypatch.setattr(worker_memory, "MAX_ENTRIES", 20)
    descriptor = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        held = worker_memory.held(os.getpid(), descriptor)
    finally:
        os.close(descriptor)
    assert held is not None and held.over(1 << 40)
    assert held.describe() == "more than 20 files and folders in its directory"


def fill(tmp_path: Path, unnamed: bool) -> str:
    """The verdict's reason for a candidate that writes 5 files of 300 MiB into its directory while it is built,
    in a worker limited to 1536 MiB (it is resident for about 400 MiB)."""
    source = (CANDIDATES / "sandbox" / "fill_directory.py").read_text()
    for key, value in {"COUNT": 5, "MIB": 300, "UNNAMED": unnamed}.items():
        source = source.replace(f"@{key}@", str(value))
    candidate = tmp_path / "fill_directory.py"
    candidate.write_text(source)
    verdict = evaluate(LEAKY, candidate, fast_options(policy=POLICY_OFF, measure=False, trials=1, memory_mb=1536))
    assert verdict.verdict == Outcome.CRASHED, verdict.reason
    return verdict.reason


def test_files_in_the_workers_directory_count_against_its_memory(tmp_path: Path) -> None:
    # Before: each file stayed under the file-size limit, and no limit counted how many there were.
    reason = fill(tmp_path, unnamed=False)
    assert re.search(r"exceeded the memory limit of 1536 MiB \(resident \d+ MiB, files \d+ MiB", reason), reason


def test_files_held_open_without_a_name_count_too(tmp_path: Path) -> None:
    reason = fill(tmp_path, unnamed=True)
    assert re.search(r"exceeded the memory limit of 1536 MiB \(resident \d+ MiB, files \d+ MiB", reason), reason
