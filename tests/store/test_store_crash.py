"""A writer killed with SIGKILL mid-run leaves every committed row readable, the file sound, and its run shown as
interrupted."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kforge.store import Store

SRC = Path(__file__).resolve().parents[2] / "src"

WRITER = textwrap.dedent(
    """
    import sys
    from kforge.store import Store

    store = Store(sys.argv[1])
    run = store.create_run(command="optimize")
    i = 0
    while True:
        attempt = store.record_attempt(
            run.id, source=f"attempt {i}", language="cpp", platform="cpu", made_by="agent", round=i
        )
        store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": float(i)})
        print(i, flush=True)  # after both commits: every number printed is on disk
        i += 1
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_run_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "kforge.db"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert writer.stdout is not None
    last = -1
    for line in writer.stdout:
        last = int(line)
        if last >= 200:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=10)
    assert writer.returncode == -signal.SIGKILL
    assert last >= 200

    with Store(path) as store:  # reopening replays the write-ahead log the killed writer left
        [run] = store.list_runs()
        attempts = store.attempts_of(run.id)
        assert len(attempts) >= last + 1  # the writer may have committed more after its last print
        for i, attempt in enumerate(attempts):
            assert (attempt.source, attempt.round) == (f"attempt {i}", i)
        evaluated = store.evaluated_attempt_ids(run.id)
        assert {a.id for a in attempts[: last + 1]} <= evaluated
        # Nobody finished it, and its process is gone: it reads as interrupted, and a resume can pick it up.
        assert run.status == "interrupted" and run.stop_reason == f"process {writer.pid} is gone"
        assert run.owner is not None and run.owner.pid == writer.pid
        assert store.resume_run(run.id).status == "running"
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    check.close()
