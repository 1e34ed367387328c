"""The harness opens nothing a candidate controls (issue 38, item 4).

A worker's directory is the candidate's to write: any name in it may be a link to a user's file, a link to
/dev/zero, a FIFO or a huge sparse file by the time the harness reads it, and the reply channel carries whatever
the candidate writes. Each trick runs through the real harness (`evaluate`, or a `Worker` where the harness's step
is a `Worker` method), with the policy off (the tricks need `os`, and compute with torch where they return
outputs), and the test asserts its verdict and that nothing of the link's target came back.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kforge.verify.evaluate import evaluate
from kforge.verify.prebuild import prebuild
from kforge.verify.protocol import LoadReply, LoadRequest
from kforge.verify.sandbox import Limits, UnsafeFile, Worker, WorkerPool, read_file_at, write_new_file_at
from kforge.verify.verdict import Outcome, Verdict
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options

LEAKY = PROBLEMS / "leaky_scale.py"
PATHS = CANDIDATES / "paths"
pytestmark = pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs POSIX links and O_NOFOLLOW")


def render(tmp_path: Path, name: str, **fill: object) -> Path:
    """The candidate `name` with its @PLACEHOLDERS@ filled in, written to tmp_path."""
    source = (PATHS / f"{name}.py").read_text()
    for key, value in fill.items():
        source = source.replace(f"@{key}@", str(value))
    assert not re.search(r"@[A-Z]+@", source), "a placeholder was left unfilled"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def judge(tmp_path: Path, name: str, fill: dict[str, object], pool: WorkerPool | None = None,
          **changes: object) -> Verdict:
    options = fast_options(policy=POLICY_OFF, measure=False, **changes)
    return evaluate(LEAKY, render(tmp_path, name, **fill), options, pool=pool)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, str]:
    """A file of the user's outside every worker, holding a secret."""
    secret = f"planted-secret-{secrets.token_hex(8)}"
    path = tmp_path / "planted" / "credentials.txt"
    path.parent.mkdir()
    path.write_text(secret + "\n")
    return path, secret


def chosen_pool(pool: WorkerPool, forked: bool) -> WorkerPool | None:
    """The module's pool (its workers forked by the fork server) or none (workers launched as interpreters)."""
    return pool if forked else None


@pytest.mark.parametrize("forked", [False, True], ids=["launched", "forked"])
def test_a_log_replaced_by_a_link_shows_nothing_of_its_target(tmp_path: Path, planted: tuple[Path, str],
                                                              pool: WorkerPool, forked: bool) -> None:
    # Before: the dead worker's log was read by its name, through the link: the secret was in the reason.
    path, secret = planted
    verdict = judge(tmp_path, "log_link", {"TARGET": path}, pool=chosen_pool(pool, forked))
    assert verdict.verdict == Outcome.CRASHED, verdict.reason
    assert "exited with status 3" in verdict.reason
    assert "the candidate's own last words" in verdict.reason  # the log the worker wrote, read all the same
    assert secret not in verdict.model_dump_json()


@pytest.mark.parametrize("forked", [False, True], ids=["launched", "forked"])
def test_a_log_replaced_by_a_link_to_dev_zero_still_gives_a_verdict(tmp_path: Path, pool: WorkerPool,
                                                                    forked: bool) -> None:
    # Before: the harness read /dev/zero until it died of MemoryError, and no verdict came back.
    verdict = judge(tmp_path, "log_link", {"TARGET": "/dev/zero"}, pool=chosen_pool(pool, forked))
    assert verdict.verdict == Outcome.CRASHED, verdict.reason
    assert "exited with status 3" in verdict.reason
    assert "the candidate's own last words" in verdict.reason


def test_an_outputs_file_replaced_by_a_link_to_a_users_file_is_refused(tmp_path: Path) -> None:
    # Before: the harness read the link's target, a file of the user's it was never handed (here a torch file, so
    # the verdict was judged on it: "the worker's output file is incomplete").
    target = tmp_path / "planted" / "outputs.pt"
    target.parent.mkdir()
    torch.save({"outputs": [], "inputs_after": []}, target)
    verdict = judge(tmp_path, "outputs_link", {"TARGET": target})
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.output-type", verdict.reason
    assert "symbolic link" in verdict.reason


@pytest.mark.timeout(300)
def test_an_outputs_file_replaced_by_a_link_to_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    # Before: the harness opened the FIFO to read it and waited forever for a writer (no verdict, no timeout).
    fifo = tmp_path / "planted" / "outputs.fifo"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    verdict = judge(tmp_path, "outputs_link", {"TARGET": fifo})
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.output-type", verdict.reason
    assert "symbolic link" in verdict.reason


def test_an_outputs_file_larger_than_the_worker_could_have_written_cannot_be_made(tmp_path: Path) -> None:
    # A sparse file of 8 GiB from a worker limited to 1.5 GiB: no honest torch.save of its outputs is that large.
    # The worker's file-size limit (its memory limit) refuses it before the harness's read cap would; that cap is
    # shown on its own below (test_a_regular_file_is_read_whole_up_to_its_cap).
    verdict = judge(tmp_path, "outputs_oversized", {"SIZE": 8 << 30}, memory_mb=1536)
    assert verdict.verdict == Outcome.RUNTIME_ERROR, verdict.reason
    assert "File too large" in verdict.reason


def test_a_link_planted_where_the_harness_hands_files_over_is_replaced_not_followed(
        tmp_path: Path, planted: tuple[Path, str]) -> None:
    # Before: hand_over found the name taken (through the link), read the user's file to compare, and wrote the
    # new text into it.
    path, secret = planted
    candidate = render(tmp_path, "handed_over_link", TARGET=path)
    (tmp_path / "builds").mkdir()
    with Worker(tmp_path / "builds", Limits()) as worker:
        worker.start(120)
        problem = worker.hand_over("problem.py", LEAKY.read_text())
        solution = worker.hand_over("solution.py", candidate.read_text())
        request = LoadRequest(problem=str(problem), solution=str(solution), seed=0, platform="cpu")
        reply = worker.request(request, LoadReply, 120)
        assert isinstance(reply, LoadReply), reply
        assert worker.path("solution.py").is_symlink(), "the candidate did not plant its links"
        for name in ("solution.py", "problem.py"):
            handed = worker.hand_over(name, "handed over again\n")
            assert not handed.is_symlink() and handed.read_text() == "handed over again\n"
    assert path.read_text() == secret + "\n"


def test_an_over_long_reply_line_is_refused_without_being_held(tmp_path: Path) -> None:
    # 24 MiB without a newline, three times the cap. Before: the harness kept every byte, waiting for the line's
    # end, until the request's deadline (a candidate writing without end would have exhausted its memory).
    verdict = judge(tmp_path, "long_reply", {"BYTES": 24 << 20}, timeout_s=30.0)
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.protocol", verdict.reason
    assert "longer than" in verdict.reason


def test_a_build_folder_named_through_a_link_loop_is_neither_followed_nor_kept(tmp_path: Path) -> None:
    # Before: resolving the folder the (forged) build reply named raised RuntimeError out of prebuild, which promises
    # never to raise for a bad candidate. Now the harness reads no folder a worker names: it takes what the dead
    # worker left in its own directory, links never followed (verify/artifact_store.py).
    result = prebuild(PATHS / "build_folder_loop.py", {}, tmp_path / "cache", policy=POLICY_OFF)
    assert result.stored == 0, result


# ---- the two primitives, on a directory the test plays the candidate in ------------------------------------------


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A directory standing for a worker's, and the descriptor the harness would hold of it."""
    path = tmp_path / "worker"
    path.mkdir()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield path, fd
    finally:
        os.close(fd)


def test_a_regular_file_is_read_whole_up_to_its_cap(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "out.pt").write_bytes(b"x" * 1000)
    assert read_file_at(fd, "out.pt", cap=1000) == b"x" * 1000
    with pytest.raises(UnsafeFile, match="larger than"):
        read_file_at(fd, "out.pt", cap=999)
    (path / "empty.pt").write_bytes(b"")
    assert read_file_at(fd, "empty.pt", cap=10) == b""
    with pytest.raises(FileNotFoundError):
        read_file_at(fd, "missing.pt", cap=10)


def test_a_link_is_refused_and_its_target_never_opened(directory: tuple[Path, int], tmp_path: Path) -> None:
    path, fd = directory
    fifo = tmp_path / "elsewhere.fifo"
    os.mkfifo(fifo)  # opened through the link, it would wait for a writer forever
    for target in (fifo, Path("/dev/zero"), tmp_path):
        link = path / "out.pt"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        with pytest.raises(UnsafeFile, match="symbolic link"):
            read_file_at(fd, "out.pt", cap=1 << 20)


@pytest.mark.timeout(60)
def test_a_fifo_is_refused_at_once(directory: tuple[Path, int]) -> None:
    path, fd = directory
    os.mkfifo(path / "out.pt")
    with pytest.raises(UnsafeFile, match="is a FIFO"):
        read_file_at(fd, "out.pt", cap=1 << 20)


def test_a_device_and_a_directory_are_refused(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "folder").mkdir()
    with pytest.raises(UnsafeFile, match="is a directory"):
        read_file_at(fd, "folder", cap=1 << 20)
    try:
        os.mknod(path / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root (CAP_MKNOD)")
    with pytest.raises(UnsafeFile, match="character device"):
        read_file_at(fd, "zero", cap=1 << 20)


def test_a_hard_link_to_a_file_elsewhere_is_refused(directory: tuple[Path, int], tmp_path: Path) -> None:
    path, fd = directory
    elsewhere = tmp_path / "users-file.txt"
    elsewhere.write_text("the user's\n")
    os.link(elsewhere, path / "out.pt")
    with pytest.raises(UnsafeFile, match="2 names"):
        read_file_at(fd, "out.pt", cap=1 << 20)


def test_a_new_file_replaces_whatever_is_planted_under_its_name(directory: tuple[Path, int],
                                                                 planted: tuple[Path, str]) -> None:
    path, fd = directory
    users, secret = planted
    (path / "solution.py").symlink_to(users)
    write_new_file_at(fd, "solution.py", b"handed over\n")
    assert not (path / "solution.py").is_symlink() and (path / "solution.py").read_text() == "handed over\n"
    assert users.read_text() == secret + "\n"
    write_new_file_at(fd, "solution.py", b"again\n")  # a regular file there is replaced too
    assert (path / "solution.py").read_text() == "again\n"
    for name in ("../solution.py", "", ".."):
        with pytest.raises(ValueError, match="not a plain file name"):
            write_new_file_at(fd, name, b"")


def test_an_outputs_file_is_removed_once_read_and_a_link_in_its_place_removes_only_the_link(
        tmp_path: Path, planted: tuple[Path, str]) -> None:
    """Read outputs leave the worker's directory (where it lies in RAM they would count against its memory); a
    link the candidate put under the name is itself removed, never what it names."""
    path, secret = planted
    with Worker(None, Limits()) as worker:
        worker.hand_over("out.pt", "outputs")
        assert worker.read_file(worker.path("out.pt"), 100) == b"outputs"
        worker.discard(worker.path("out.pt"))
        assert not worker.path("out.pt").exists()
        worker.discard(worker.path("out.pt"))  # gone already: nothing to do
        worker.path("link.pt").symlink_to(path)
        worker.discard(worker.path("link.pt"))
        assert not worker.path("link.pt").is_symlink()
        with pytest.raises(ValueError):
            worker.discard(tmp_path / "elsewhere.pt")
    assert path.read_text() == secret + "\n"
