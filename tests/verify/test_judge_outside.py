"""The judgment stays with the harness: a worker hands over data, never a verdict, and its clocks are checked
against the harness's own (issue: the judge outside the judged).

Each trick is judged with the whole policy off, so that what stops it is shown to be the protocol or the clock,
not a rule about the candidate's source.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kforge.verify import freeze
from kforge.verify.evaluate import evaluate
from kforge.verify.outside_clock import (
    BATCHES_PER_ROUND,
    TOLERANCE,
    BatchPlan,
    BatchReading,
    outside_disagreement,
    plan_batches,
)
from kforge.verify.policy import Policy
from kforge.verify.protocol import Failure, LoadReply, MalformedReply, read_reply
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, PROBLEMS, fast_options

LEAKY = PROBLEMS / "leaky_scale.py"
JUDGE = CANDIDATES / "judge"
POLICY_OFF = Policy(static_checks=False, dynamic_checks=False)


def judge(candidate: str, platform: str = "cpu"):
    return evaluate(LEAKY, JUDGE / f"{candidate}.py", fast_options(policy=POLICY_OFF, platform=platform))


def test_a_failure_of_kind_correct_is_no_reply_at_all() -> None:
    with pytest.raises(MalformedReply, match="kind"):
        read_reply(b'{"ok": false, "kind": "correct", "message": "fine"}', LoadReply)
    failure = read_reply(b'{"ok": false, "kind": "compile_error", "message": "x.cpp:1: error"}', LoadReply)
    assert isinstance(failure, Failure) and failure.kind == "compile_error"


def test_a_verdict_forged_on_the_reply_channel_is_rejected() -> None:
    verdict = judge("forged_verdict")
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.protocol", verdict.reason
    assert verdict.trials == 0


def test_a_reply_pushed_ahead_of_the_workers_own_is_rejected() -> None:
    # The forged answer to `load` fits, but then the worker's own answer is one line too many.
    verdict = judge("forged_load_reply")
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.protocol", verdict.reason
    # Seen before the next request goes out, it is a line nobody asked for; on a loaded machine the worker's own
    # line may come only after that request was sent, and is then read as its answer, which does not fit.
    assert "nobody asked for" in verdict.reason or "did not fit the protocol" in verdict.reason, verdict.reason


@pytest.mark.parametrize("platform", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_clocks_scaled_inside_the_worker_are_caught_by_the_harness_clock(platform: str) -> None:
    honest = judge("torch_ops", platform)
    assert honest.verdict == Outcome.CORRECT, honest.reason
    assert honest.runtime_ms is not None and honest.outside_ms is not None
    # The batches run warm: an honest kernel is no slower a call there than its median (and the tolerance leaves
    # room for a busier moment).
    assert honest.outside_ms <= TOLERANCE * honest.runtime_ms
    cheat = judge("rebound_clocks", platform)
    assert cheat.verdict == Outcome.REJECTED and cheat.rule == "dynamic.clock", cheat.reason
    assert "on the harness's own clock" in cheat.reason


def test_batches_are_short_and_fit_in_memory() -> None:
    assert plan_batches(500_000, 1 << 20) == BatchPlan(calls=4, batches=BATCHES_PER_ROUND)  # 2 ms of 0.5 ms calls
    assert plan_batches(10, 1 << 10).calls == 64  # a timer claiming nothing buys only the cap
    assert plan_batches(100_000_000, 1) == BatchPlan(calls=1, batches=BATCHES_PER_ROUND)
    big = plan_batches(1_000, 300 << 20)  # three calls' inputs and outputs fill the 1 GiB room
    assert big == BatchPlan(calls=1, batches=2) and big.staged == 3
    assert plan_batches(1_000, 2 << 30) == BatchPlan(calls=1, batches=1)  # one warm-up and one timed call at least
    assert plan_batches(1_000, 64 << 20, memory_bytes=1 << 30).staged == 4  # a quarter of a 1 GiB worker


def test_a_timer_far_below_the_batches_is_contradicted() -> None:
    readings = [BatchReading(calls=100, batch_ns=102_050_000, empty_ns=250_000),
                BatchReading(calls=100, batch_ns=150_000_000, empty_ns=250_000)]
    assert outside_disagreement(1_000_000, readings) is None  # 1 ms a call, as the quickest batch saw it
    assert outside_disagreement(0.9 * 1_000_000, readings) is None  # a little quicker: within the tolerance
    found = outside_disagreement(40_000, readings)  # 25 times quicker than the harness saw
    assert found is not None and "100 calls in a row took 1.008 ms each" in found
    assert outside_disagreement(40_000, []) is None


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux's unshare")
def test_every_process_of_a_worker_is_stopped_while_a_baseline_is_timed() -> None:
    # A process namespace of its own, as the sandbox gives a worker, holding a busy helper and another one in a
    # session of its own whose parent has gone: neither its process group nor a parent leads to that one, the
    # namespace does.
    script = """sh -c 'while :; do :; done' & setsid sh -c "sh -c 'while :; do :; done' &" ; wait"""
    root = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c", script],
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(freeze.worker_processes(root.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # unshare, the namespace's first process (sh), and the two loops
        if len(freeze.worker_processes(root.pid)) < 4:
            pytest.skip("this system refuses a process namespace")
        with freeze.stopped([root.pid]):
            held = freeze.worker_processes(root.pid)
            assert len(held) >= 4 and all(_state(pid) in "Tt" for pid in held)
        assert all(_state(pid) not in "Tt" for pid in freeze.worker_processes(root.pid))
    finally:
        os.killpg(root.pid, signal.SIGKILL)  # unshare's --kill-child takes the namespace down with it
        root.wait()


def test_the_candidates_worker_is_stopped_whenever_a_baseline_is_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, bool]] = []
    real = freeze.stopped

    @contextlib.contextmanager
    def watched(pids):
        with real(pids):
            for pid in pids:  # every process of the worker, as the baseline's round starts
                seen.append((pid, all(_state(held) in "Tt" for held in freeze.worker_processes(pid))))
            yield

    monkeypatch.setattr(freeze, "stopped", watched)
    options = fast_options(policy=POLICY_OFF, baselines=("eager",))
    verdict = evaluate(LEAKY, JUDGE / "torch_ops.py", options)
    assert verdict.verdict == Outcome.CORRECT and verdict.eager_ms is not None, verdict.reason
    assert len(seen) == options.timing.rounds, seen  # one eager round each time
    assert all(stopped for _, stopped in seen), seen
