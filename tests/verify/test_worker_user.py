"""The worker's own user (verify/worker_user.py, issue 38: least privilege), and the limits that need one.

As root, a worker becomes 2,000,000,000 + its process id (the reference's workers 2,000,000,000), owns its
directory and nothing of root's, and counts its processes alone. Checked on workers the harness starts, on a
confined interpreter (where the plan is changed to let Landlock allow what only the user's rights then refuse),
and on the files the harness hands over. Where the tests do not run as root they are skipped.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

import kforge
from kforge.verify import confine, worker_user
from kforge.verify.artifact_store import ArtifactStore
from kforge.verify.sandbox import Limits, Worker, _limit_child
from kforge.verify.sandbox_rules import confinement_for

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="workers change their user only where the harness is root")
enforced = pytest.mark.skipif(bool(confine.probe()), reason="needs Landlock and seccomp")


def test_the_ids_come_from_the_base_and_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv(worker_user.VARIABLE, raising=False)
    base, refused = worker_user.planned_base()
    assert (base, refused) == (worker_user.DEFAULT_BASE, "")
    assert worker_user.worker_id(base, per_process=True, pid=4242) == base + 4242
    assert worker_user.worker_id(base, per_process=False, pid=4242) == base
    monkeypatch.setenv(worker_user.VARIABLE, "0")
    assert worker_user.planned_base() == (None, f"switched off ({worker_user.VARIABLE}=0)")


def test_a_range_that_holds_an_account_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(worker_user, "known_ids", lambda: frozenset({0, 1000, 70_000}))
    monkeypatch.setenv(worker_user.VARIABLE, "65536")
    base, refused = worker_user.planned_base()
    assert base is None and "id 70000 of /etc/passwd or /etc/group" in refused
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert worker_user.planned_base() == (None, "")  # not root: workers stay the harness's user


def test_the_probe_names_a_root_harness_whose_workers_keep_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kforge eval` warns before any worker starts (and --require-sandbox refuses) when the harness runs as root
    but its workers cannot take users of their own."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv(worker_user.VARIABLE, "0")
    assert any(f"a user of the worker's own (root's files out of its reach): switched off ({worker_user.VARIABLE}=0)"
               == line for line in confine.probe())
    monkeypatch.delenv(worker_user.VARIABLE)
    assert not any("a user of the worker's own" in line for line in confine.probe())
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv(worker_user.VARIABLE, "0")
    assert not any("a user of the worker's own" in line for line in confine.probe())  # not root: nothing to drop


def test_the_default_range_is_free_here() -> None:
    base = worker_user.DEFAULT_BASE
    assert not worker_user.known_ids() & set(range(base, base + (1 << 22) + 1))


def test_a_folder_closed_to_others_is_found_on_the_way(tmp_path: Path) -> None:
    closed = tmp_path / "home"
    inner = closed / "venv" / "lib"
    inner.mkdir(parents=True)
    closed.chmod(0o700)
    (closed / "venv").chmod(0o755)
    found = worker_user.closed_folders([str(inner)], uid=123_456, groups=[])
    assert str(closed) in found and str(closed / "venv") not in found
    owner = closed.stat().st_uid  # its owner passes
    assert str(closed) not in worker_user.closed_folders([str(inner)], uid=owner, groups=[])


@as_root
@enforced
def test_a_worker_started_by_the_harness_runs_as_a_user_of_its_own(tmp_path: Path) -> None:
    base = worker_user.DEFAULT_BASE
    with Worker(None, Limits()) as candidate, Worker(tmp_path / "builds", Limits()) as reference:
        for worker, expected in ((candidate, base + candidate.process.pid), (reference, base)):
            worker.start(120)
            assert f"unprivileged user (uid {expected})" in worker.confinement["enforced"]
            assert worker.unconfined == []
            assert worker.owner == (expected, expected)
            root = psutil.Process(worker.process.pid)
            # The process the harness started waits as root for its child, the worker proper, in the worker's
            # process namespace; every process that runs the worker's code is the worker's user.
            served = [process for process in [root, *root.children(recursive=True)] if process.uids().real != 0]
            assert served and all(process.uids() == (expected,) * 3 for process in served)
            assert all(process.gids() == (expected,) * 3 for process in served)
        handed = candidate.hand_over("solution.py", "x = 1\n")
        assert (handed.stat().st_uid, handed.stat().st_gid) == (base + candidate.process.pid,) * 2
    assert (tmp_path / "builds").stat().st_uid == base  # the reference's caches are its workers'


@as_root
def test_restored_builds_are_given_to_the_workers_user(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "store")
    built = tmp_path / "built"
    library = built / "builds" / "ext_0123" / "ext.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"\x7fELF library")
    key = "a" * 64
    assert store.ingest(key, built) == 1
    worker = tmp_path / "worker"
    restored = store.restore(key, worker, owner=(2_000_000_007, 2_000_000_007))
    assert list(restored.files) == ["builds/ext_0123/ext.so"]
    for path in (worker / "builds", worker / "builds" / "ext_0123", worker / "builds" / "ext_0123" / "ext.so"):
        assert (path.stat().st_uid, path.stat().st_gid) == (2_000_000_007, 2_000_000_007), path


PROBE = textwrap.dedent('''
    import json, os, signal, sys
    from pathlib import Path
    from kforge.verify import confine

    report = confine.apply(confine.Confinement.from_json(Path(sys.argv[1]).read_text()))
    seen = {"report": report.as_dict(), "uid": os.getuid(), "groups": os.getgroups()}
    target = Path(sys.argv[2])

    def attempt(call):
        try:
            call()
            return "done"
        except OSError as exc:
            return exc.errno

    def append():
        with open(target / "root-owned.txt", "a") as file:
            file.write("escaped")

    seen["append_to_roots_file"] = attempt(append)
    seen["create_in_roots_folder"] = attempt(lambda: (target / "planted.txt").write_text("escaped"))
    seen["write_own_directory"] = attempt(lambda: Path("mine.txt").write_text("mine"))
    children, seen["fork_failed"] = [], None
    while len(children) < 1000:
        try:
            child = os.fork()
        except OSError as exc:
            seen["fork_failed"] = exc.errno
            break
        if child == 0:
            signal.pause()
            os._exit(0)
        children.append(child)
    seen["children"] = len(children)
    for child in children:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    print(json.dumps(seen))
''')


def run_probe(tmp_path: Path, trusted: bool = False, processes: int = 64,
              **changes: object) -> tuple[dict[str, object], int]:
    """A confined interpreter, started as the harness starts a worker, whose plan lets Landlock allow writing a
    folder of root's (so that only the user's rights refuse it), allows `processes` and has `changes`; what it
    saw, and its process id."""
    work, roots = tmp_path / "worker", tmp_path / "roots"
    work.mkdir(parents=True)
    roots.mkdir()
    (roots / "root-owned.txt").write_text("root's\n")
    (roots / "root-owned.txt").chmod(0o644)
    environment = {**os.environ, "PYTHONPATH": str(Path(kforge.__file__).resolve().parent.parent)}
    plan = confinement_for(work, [], environment, trusted=trusted)
    plan = dataclasses.replace(plan, write=(*plan.write, str(roots.resolve())), processes=processes, **changes)
    (tmp_path / "plan.json").write_text(plan.to_json())
    probe = subprocess.Popen([sys.executable, "-c", PROBE, str(tmp_path / "plan.json"), str(roots)], cwd=work,
                             env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: _limit_child(Limits()))
    out, err = probe.communicate(timeout=120)
    assert probe.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), probe.pid


@as_root
@enforced
def test_a_workers_user_cannot_write_roots_files_even_where_landlock_would_let_it(tmp_path: Path) -> None:
    seen, pid = run_probe(tmp_path)
    assert seen["uid"] == worker_user.DEFAULT_BASE + pid and seen["groups"] == []
    assert seen["report"]["missing"] == []  # type: ignore[index]
    assert seen["append_to_roots_file"] == errno.EACCES and seen["create_in_roots_folder"] == errno.EACCES
    assert (tmp_path / "roots" / "root-owned.txt").read_text() == "root's\n"
    assert not (tmp_path / "roots" / "planted.txt").exists()
    assert seen["write_own_directory"] == "done"


@as_root
@enforced
def test_a_fork_loop_stops_at_the_process_limit(tmp_path: Path) -> None:
    seen, _ = run_probe(tmp_path, processes=64)
    assert "64 processes" in " ".join(seen["report"]["enforced"])  # type: ignore[index]
    assert seen["fork_failed"] == errno.EAGAIN
    assert 50 <= seen["children"] < 64  # type: ignore[operator]  # the probe itself counts, and its threads


@as_root
@enforced
def test_the_references_workers_share_one_user(tmp_path: Path) -> None:
    seen, _ = run_probe(tmp_path, trusted=True)
    assert seen["uid"] == worker_user.DEFAULT_BASE
    assert "the reference's workers together" in " ".join(seen["report"]["enforced"])  # type: ignore[index]


@enforced
def test_each_layer_leaves_a_line_enforced_or_missing(tmp_path: Path) -> None:
    """What --require-sandbox relies on: a layer that does not hold is named in `missing`, never left out."""
    layers = ("network namespace", "process namespace", "unprivileged user", "no capabilities", "limits:",
              "Landlock", "seccomp")
    seen, _ = run_probe(tmp_path / "all")
    enforced = seen["report"]["enforced"]  # type: ignore[index]
    assert all(any(line.startswith(layer) for line in enforced) for layer in layers), enforced
    assert seen["report"]["missing"] == []  # type: ignore[index]
    seen, _ = run_probe(tmp_path / "none", processes=0, network_namespace=False, process_namespace=False,
                        cpu_seconds=0, user_id=None, user_refused="refused by the test")
    missing = " | ".join(seen["report"]["missing"])  # type: ignore[index]
    for line in ("network namespace: switched off", "process namespace: switched off", "process count: not limited",
                 "CPU time: not limited"):
        assert line in missing, missing
    if os.geteuid() == 0:
        assert "unprivileged user: refused by the test; the worker stays uid 0" in missing


@as_root
def test_switched_off_a_worker_stays_root_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(worker_user.VARIABLE, "0")
    with Worker(None, Limits()) as worker:
        worker.start(120)
        assert worker.owner is None
        assert (f"unprivileged user: switched off ({worker_user.VARIABLE}=0); the worker stays uid 0 without "
                "capabilities") in worker.unconfined
        assert "process count: not limited (uid 0 is exempt from it)" in worker.unconfined
        assert "no capabilities" in worker.confinement["enforced"]
