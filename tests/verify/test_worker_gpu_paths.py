"""The worker's GPU-specific paths, driven on the CPU by stand-in platforms: outputs copied on the caller's
stream before the device-wide wait, and a worker that retires when its device context is lost."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import torch

from kforge.platforms.cpu import CpuPlatform
from kforge.verify import worker
from kforge.verify.protocol import RunRequest
from kforge.verify.tamper import CandidateWatch
from kforge.verify.worker import RequestFailed, WorkerState, serve


class LateKernel(CpuPlatform):
    """An asynchronous device on which the last kernel finishes writing only at the next synchronize."""

    asynchronous = True

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[torch.Tensor] = []

    def synchronize(self) -> None:
        for output in self.pending:
            output.fill_(1.0)
        self.pending.clear()


def state_with(platform: CpuPlatform, model: Any) -> WorkerState:
    # Built by hand: WorkerState() would install the build cache's load_inline in the test process.
    state = WorkerState.__new__(WorkerState)
    state.platform, state.problem, state.model = platform, object(), model  # type: ignore[assignment]
    state.watch = CandidateWatch()
    state.candidate_loaded = True
    return state


def test_an_output_still_being_written_after_return_is_rejected() -> None:
    platform = LateKernel()

    def detached(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        platform.pending.append(out)  # "launched" on a stream the caller never waits for
        return out

    with pytest.raises(RequestFailed) as caught:
        state_with(platform, detached)._call([torch.ones(4)], record=False)
    assert caught.value.rule == "dynamic.unsynchronized"


def test_an_output_complete_at_return_is_kept_as_the_callers_stream_saw_it() -> None:
    state = state_with(LateKernel(), lambda x: x * 2)
    kept, _ = state._call([torch.ones(4)], record=False)
    assert torch.equal(kept, torch.full((4,), 2.0))


class LostDevice(CpuPlatform):
    def device_lost(self, error: BaseException) -> str | None:
        return "CUDA error: an illegal memory access was encountered" if "illegal" in str(error) else None


class FailingState:
    """Every request fails with the same error."""

    platform = LostDevice()

    def __init__(self, error: str) -> None:
        self.error = error

    def __getattr__(self, op: str) -> Any:
        def fail(request: Any) -> Any:
            raise RequestFailed("runtime_error", f"forward failed: {self.error}")

        return fail


REQUEST = RunRequest(seed=1, out="outputs.pt").model_dump_json() + "\n"


def test_a_worker_whose_device_is_lost_answers_crashed_and_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    exits: list[int] = []

    def fake_exit(code: int) -> None:
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(worker.os, "_exit", fake_exit)
    reply = io.StringIO()
    with pytest.raises(SystemExit):
        serve(FailingState("CUDA error: an illegal memory access was encountered"), [REQUEST], reply)  # type: ignore[arg-type]
    answer = json.loads(reply.getvalue())
    assert answer["kind"] == "crashed" and "illegal memory access" in answer["message"]
    assert exits == [70]


def test_an_ordinary_failure_leaves_the_worker_serving() -> None:
    reply = io.StringIO()
    serve(FailingState("shapes do not match"), [REQUEST] * 2, reply)  # type: ignore[arg-type]
    answers = [json.loads(line) for line in reply.getvalue().splitlines()]
    assert [answer["kind"] for answer in answers] == ["runtime_error", "runtime_error"]
