"""A slot's kept task process: it runs the slot's problems one after another in one process (torch imported once,
one worker pool), sends each job's output to that job's log, and when it dies under a job, the job is run again in a
fresh process and its row says so."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from kforge.suite.runner import task_row
from kforge.suite.task import TaskSpec
from kforge.suite.task_process import TaskProcess, TaskProcessClosed
from kforge.verify.evaluate import EvalOptions
from tests.conftest import CANDIDATES, PROBLEMS

LEAKY = PROBLEMS / "leaky_scale.py"
HONEST = CANDIDATES / "leaky_scale" / "honest.py"
# Prints as the task process loads it: the line must land in the job's own log.
NOISY = LEAKY.read_text() + "\nprint('noisy problem loaded')\n"


def judge(problem: Path, solution: Path) -> TaskSpec:
    options = EvalOptions(rep_ms=60, timeout_s=60, baselines=("eager",))
    return TaskSpec(problem=problem.name, path=str(problem), mode="judge", solution=str(solution), platform="cpu",
                    eval_options=options)


@pytest.mark.slow
def test_one_kept_process_runs_the_slots_problems_one_after_another(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(NOISY)
    tasks = TaskProcess({"OMP_NUM_THREADS": "1"}, tmp_path / "slot.log")
    try:
        first = task_row(judge(LEAKY, HONEST), "cpu 0", tasks, tmp_path / "first.log")
        pid = tasks.pid
        second = task_row(judge(tmp_path / "noisy.py", HONEST), "cpu 0", tasks, tmp_path / "second.log")
        assert pid is not None and tasks.pid == pid, "the second problem started a process of its own"
    finally:
        tasks.close()
    assert tasks.pid is None
    assert (first.status, second.status) == ("solved", "solved"), (first.reason, second.reason)
    assert (first.tries, second.tries) == (1, 1)
    assert "noisy problem loaded" in (tmp_path / "second.log").read_text()
    assert "noisy problem loaded" not in (tmp_path / "first.log").read_text()


@pytest.mark.slow
def test_a_job_whose_process_is_killed_runs_again_in_a_fresh_one(tmp_path: Path) -> None:
    tasks = TaskProcess({"OMP_NUM_THREADS": "1"}, tmp_path / "slot.log")
    log = tmp_path / "job.log"
    killed: list[int] = []
    ended = threading.Event()

    def kill_once_started() -> None:  # once the harness says what it does: the job is under way
        while not ended.wait(0.05):
            if tasks.pid is not None and log.exists() and "s  " in log.read_text():
                killed.append(tasks.pid)
                os.kill(tasks.pid, signal.SIGKILL)
                return

    killer = threading.Thread(target=kill_once_started)
    killer.start()
    try:
        row = task_row(judge(LEAKY, HONEST), "cpu 0", tasks, log)
    finally:
        ended.set()
        killer.join()
        tasks.close()
    assert killed, "the job ended before it could be killed"
    assert row.status == "solved" and row.tries == 2, (row.status, row.tries, row.reason)


@pytest.mark.slow
def test_closing_the_process_under_a_running_job_ends_the_job_without_a_row(tmp_path: Path) -> None:
    # What Ctrl-C does to a suite: the main thread closes every slot's process while a thread waits on a job. The
    # job must end with TaskProcessClosed (its problem stays to do), not a crash, a row, or a fresh process.
    tasks = TaskProcess({"OMP_NUM_THREADS": "1"}, tmp_path / "slot.log")
    log = tmp_path / "job.log"
    closed = threading.Event()

    def close_once_started() -> None:
        for _ in range(1200):
            if tasks.pid is not None and log.exists() and "s  " in log.read_text():
                tasks.close()
                closed.set()
                return
            threading.Event().wait(0.05)

    closer = threading.Thread(target=close_once_started)
    closer.start()
    try:
        with pytest.raises(TaskProcessClosed):
            task_row(judge(LEAKY, HONEST), "cpu 0", tasks, log)
    finally:
        closer.join()
    assert closed.is_set(), "the job ended before the process could be closed"
    assert tasks.pid is None
    with pytest.raises(TaskProcessClosed):  # and nothing starts again in it
        task_row(judge(LEAKY, HONEST), "cpu 0", tasks, log)
