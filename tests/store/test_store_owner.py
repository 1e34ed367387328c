"""A run records the process that owns it; a run left `running` by a process that is gone reads as interrupted."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.store import Owner, Store, StoreError
from kforge.store.owner import ProcessLookup, current_owner, process_start, shown_status

V1_DUMP = Path(__file__).parent / "data" / "schema_v1.sql"
ALIVE = {4242: 7}  # a fake process table: pid 4242, started at tick 7


def lookup(table: dict[int, int]) -> ProcessLookup:
    return table.get


@pytest.mark.parametrize(("status", "owner", "processes", "shown"), [
    ("running", Owner(4242, 7), ALIVE, "running"),
    ("running", Owner(4242, 7), {}, "interrupted"),  # no such process
    ("running", Owner(4242, 7), {4242: 9}, "interrupted"),  # the pid was reused by a later process
    ("running", None, {}, "running"),  # a store from before owners were recorded: as recorded
    ("finished", Owner(4242, 7), {}, "finished"),  # an ended run is what it recorded
    ("failed", Owner(4242, 7), ALIVE, "failed"),
])
def test_a_run_stands_as_running_only_while_its_owner_lives(status, owner, processes, shown) -> None:
    assert shown_status(status, owner, lookup(processes)) == shown


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def test_a_live_process_has_a_start_and_a_killed_one_has_none(sleeper: subprocess.Popen[bytes]) -> None:
    me = current_owner()
    assert me is not None and me.pid == os.getpid() and process_start(os.getpid()) == me.started
    started = process_start(sleeper.pid)
    assert started is not None and process_start(sleeper.pid) == started  # the same each time it is asked
    sleeper.send_signal(signal.SIGKILL)
    sleeper.wait()
    assert process_start(sleeper.pid) is None
    assert process_start(0) is None and process_start(-1) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_process_its_parent_has_not_reaped_counts_as_gone(sleeper: subprocess.Popen[bytes]) -> None:
    os.kill(sleeper.pid, signal.SIGKILL)
    stat = Path(f"/proc/{sleeper.pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stat.exists()  # still in the process table, waiting for its exit status to be read
    assert process_start(sleeper.pid) is None


def test_the_store_shows_a_run_whose_owner_is_gone_as_interrupted(tmp_path: Path) -> None:
    processes = dict(ALIVE)
    with Store(tmp_path / "runs.db", process_lookup=processes.get) as store:
        gone = store.create_run(command="optimize", owner=Owner(4242, 7)).id
        ended = store.create_run(command="optimize", owner=Owner(4242, 7)).id
        store.finish_run(ended, "finished", "finished 3 optimization rounds")
        assert store.get_run(gone).status == "running"  # type: ignore[union-attr]
        del processes[4242]  # killed
        run = store.get_run(gone)
        assert run is not None and run.status == "interrupted" and run.stop_reason == "process 4242 is gone"
        assert run.finished is None and run.owner == Owner(4242, 7)
        assert store.get_run(ended).status == "finished"  # type: ignore[union-attr]
        assert [r.id for r in store.list_runs(status="interrupted")] == [gone]
        assert store.list_runs(status="running") == []
        me = current_owner()
        assert me is not None
        processes[me.pid] = me.started
        resumed = store.resume_run(gone)  # this process owns it now
        assert resumed.status == "running" and resumed.owner == me and resumed.stop_reason is None


def test_status_filters_and_limits_count_runs_as_they_stand(tmp_path: Path) -> None:
    processes = dict(ALIVE)
    with Store(tmp_path / "runs.db", process_lookup=processes.get) as store:
        ids = [store.create_run(command="optimize", owner=Owner(pid, 7)).id for pid in (4242, 5000, 4242, 5000)]
        store.finish_run(ids[0], "interrupted", "interrupted (Ctrl-C)")
        # ids[1] and ids[3] are owned by a pid the table lacks: they stand as interrupted.
        assert [r.id for r in store.list_runs(status="interrupted")] == [ids[3], ids[1], ids[0]]
        assert [r.id for r in store.list_runs(status="interrupted", limit=2)] == [ids[3], ids[1]]
        assert [r.id for r in store.list_runs(status="running", limit=1)] == [ids[2]]
        assert [r.status for r in store.list_runs(limit=2)] == ["interrupted", "running"]


def test_a_run_another_process_still_runs_is_not_resumed(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    started = process_start(sleeper.pid)
    assert started is not None
    with Store(tmp_path / "runs.db") as store:
        run = store.create_run(command="optimize", owner=Owner(sleeper.pid, started))
        assert store.get_run(run.id).status == "running"  # type: ignore[union-attr]
        with pytest.raises(StoreError, match=f"run {run.id} is still running in process {sleeper.pid}"):
            store.resume_run(run.id)
        sleeper.kill()
        sleeper.wait()
        assert store.get_run(run.id).status == "interrupted"  # type: ignore[union-attr]
        assert store.resume_run(run.id).owner == current_owner()


def test_a_run_recorded_before_owners_were_shows_what_it_recorded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(V1_DUMP.read_text())
    conn.execute("INSERT INTO runs (created, command, status) VALUES ('2025-01-03T00:00:00+00:00', 'optimize',"
                 " 'running')")
    conn.commit()
    conn.close()
    with Store(path, process_lookup=lambda pid: None) as store:
        [running, finished] = store.list_runs()
        assert (running.status, running.owner, running.stop_reason) == ("running", None, None)
        assert finished.status == "finished"
        assert store.resume_run(running.id).owner == current_owner()  # resumed, it is owned from now on
