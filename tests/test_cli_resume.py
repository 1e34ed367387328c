"""A run whose process is killed, as `kforge runs` shows it and as `kforge optimize --resume` takes it up: real
subprocesses, SIGKILL, and the builtin engine writing Triton on the CPU (the interpreter: a run of a few seconds)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import PROBLEMS

SRC = Path(__file__).resolve().parents[1] / "src"
PROBLEM = PROBLEMS / "engine" / "channel_gate.py"
ENGINE = ["--platform", "cpu", "--language", "triton", "--model", "builtin"]

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFORGE_", "OPENAI_", "ANTHROPIC_"))}
    if "KFORGE_CACHE_DIR" in os.environ:
        env["KFORGE_CACHE_DIR"] = os.environ["KFORGE_CACHE_DIR"]
    # The subprocesses import kforge from this checkout, whatever is installed.
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")])), "COLUMNS": "200"}


def kforge(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kforge", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=environment(), cwd=cwd)


def runs(db: Path, *args: str) -> list[dict[str, object]]:
    listed = kforge("runs", "--db", db, "--json", *args, cwd=db.parent)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines()]


def wait_for_a_run(db: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                    return
        except sqlite3.Error:
            pass  # the file or its tables are not made yet
        time.sleep(0.02)
    raise AssertionError("the run was never recorded")


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def test_a_killed_run_shows_as_interrupted_and_its_resume_writes_the_recorded_out_file(tmp_path: Path) -> None:
    db, started_in, elsewhere = tmp_path / "runs.db", tmp_path / "work", tmp_path / "elsewhere"
    started_in.mkdir()
    elsewhere.mkdir()
    # `--out` is relative to where the run started: the resume, run from another folder, still writes it there.
    process = subprocess.Popen([sys.executable, "-m", "kforge", "optimize", str(PROBLEM), *ENGINE, "--db", str(db),
                                "--out", "best.py"], cwd=started_in, env=environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_a_run(db, process)
    finally:
        kill(process)
    out = started_in / "best.py"
    assert not out.exists()  # killed before the run ended

    [row] = runs(db)
    assert row["status"] == "interrupted" and row["stop_reason"] == f"process {process.pid} is gone"
    assert [r["run"] for r in runs(db, "--status", "interrupted")] == [1] and runs(db, "--status", "running") == []

    refused = kforge("optimize", "--resume", "1", "--db", db, "--rounds", "5", "--language", "cpp", cwd=elsewhere)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "run 1 keeps the settings it started with: drop --language, --rounds from --resume" in refused.stderr

    resumed = kforge("optimize", "--resume", "1", "--db", db, cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"wrote {out}" in resumed.stdout and "@triton.jit" in out.read_text()
    assert not (elsewhere / "best.py").exists()
    assert runs(db)[0]["status"] == "finished"

    # A resume may name another --out: it wins for that resume, and says so.
    moved = kforge("optimize", "--resume", "1", "--db", db, "--out", "copy.py", cwd=elsewhere)
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert (elsewhere / "copy.py").read_text() == out.read_text()
    assert f"--out {elsewhere / 'copy.py'} for this resume (the run recorded {out})" in moved.stderr


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from kforge.pipelines.request import build_request, start_run
    from kforge.store import Store

    request = build_request(Path(sys.argv[2]), model=None, platform="cpu", language="triton")
    with Store(sys.argv[1]) as store:
        start_run(store, request)
    print("recorded", flush=True)
    time.sleep(600)
    """
)


def test_a_run_whose_process_still_lives_is_running_and_is_not_resumed(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(PROBLEM)], env=environment(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "recorded"
        assert runs(db)[0]["status"] == "running"
        refused = kforge("optimize", "--resume", "1", "--db", db, cwd=tmp_path)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert f"run 1 is still running in process {holder.pid}" in refused.stderr
    finally:
        kill(holder)
    assert runs(db)[0]["status"] == "interrupted"
