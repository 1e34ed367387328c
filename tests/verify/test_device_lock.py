"""The device lock shared by processes that judge on one device: timing alone, other work side by side.

Processes here are real ones (the lock is flock on a file, between processes); each records when it held the
lock, and the records are checked for overlaps.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from kforge.verify.device_lock import ENV, DeviceLock, NoLock, device_lock
from tests.conftest import CANDIDATES, PROBLEMS, fast_options


def _holder(lock_path: str, record: str, rounds: int, hold_s: float) -> None:
    """Alternate shared work and exclusive timing, the timing taken from inside the shared hold (as evaluate
    does); append (kind, start, end) to `record`."""
    lock = DeviceLock(Path(lock_path))
    spans = []
    for _ in range(rounds):
        with lock.shared():
            start = time.monotonic()
            time.sleep(hold_s)
            spans.append(("shared", start, time.monotonic()))
            with lock.exclusive():
                start = time.monotonic()
                time.sleep(hold_s)
                spans.append(("exclusive", start, time.monotonic()))
            start = time.monotonic()
            time.sleep(hold_s)
            spans.append(("shared", start, time.monotonic()))
    Path(record).write_text(json.dumps(spans))


def test_timing_never_overlaps_other_work_and_shared_work_overlaps(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    records = [tmp_path / f"spans-{index}.json" for index in range(3)]
    processes = [context.Process(target=_holder, args=(str(tmp_path / "gpu.lock"), str(record), 6, 0.02))
                 for record in records]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)  # three processes each going from shared to exclusive: none waits forever
        assert process.exitcode == 0
    spans = [(index, *span) for index, record in enumerate(records) for span in json.loads(record.read_text())]
    assert len(spans) == 3 * 6 * 3
    overlaps_with_timing = [
        (one, other) for one in spans for other in spans
        if one[0] != other[0] and one[1] == "exclusive" and one[2] < other[3] and other[2] < one[3]]
    assert not overlaps_with_timing, overlaps_with_timing[:3]
    shared = [span for span in spans if span[1] == "shared"]
    assert any(one[0] != other[0] and one[2] < other[3] and other[2] < one[3] for one in shared for other in shared)


def test_a_process_waiting_to_time_is_not_overtaken_by_new_shared_holders(tmp_path: Path) -> None:
    path = tmp_path / "gpu.lock"
    first, timer, late = DeviceLock(path), DeviceLock(path), DeviceLock(path)  # three open files: three holders
    order: list[str] = []
    with first.shared():
        def time_it() -> None:
            with timer.exclusive():
                order.append("timer")

        def share_late() -> None:
            with late.shared():
                order.append("late")

        timing = threading.Thread(target=time_it)
        timing.start()
        time.sleep(0.3)  # the timer now waits at the lock, holding the gate
        sharing = threading.Thread(target=share_late)
        sharing.start()
        time.sleep(0.3)
        assert order == []  # neither runs while the first shared holder works
    timing.join(10)
    sharing.join(10)
    assert order == ["timer", "late"]
    assert timer.waited_s >= 0.5


def test_a_process_without_the_variable_locks_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert isinstance(device_lock(), NoLock)
    monkeypatch.setenv(ENV, str(tmp_path / "locks" / "gpu-0.lock"))
    lock = device_lock()
    assert isinstance(lock, DeviceLock) and lock is device_lock()
    assert lock.path.parent.is_dir()


@pytest.mark.slow
def test_evaluate_times_only_when_no_other_process_works_on_the_device(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kforge.verify.evaluate import evaluate
    from kforge.verify.verdict import Outcome

    path = tmp_path / "cpu.lock"
    monkeypatch.setenv(ENV, str(path))
    neighbour = DeviceLock(path)  # another process's hold: its own open file
    events: list[str] = []
    verdicts = []
    with neighbour.shared():
        judging = threading.Thread(target=lambda: verdicts.append(evaluate(
            PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py",
            fast_options(baselines=("eager",)), progress=events.append)))
        judging.start()
        deadline = time.monotonic() + 120
        while not any(event.startswith("checking correctness") for event in events) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(3)  # correctness runs beside the neighbour's work; timing waits for it to end
        assert any(event.startswith("checking correctness") for event in events), events
        assert not any(event.startswith("timing") for event in events), events
        assert judging.is_alive()
    judging.join(120)
    [verdict] = verdicts
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert any(event.startswith("timing") for event in events)
    assert verdict.eager_ms is not None
