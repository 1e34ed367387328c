"""The loop's decisions, with a scripted chat and a scripted judge (the end-to-end tests use real ones)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kforge.agents.analyst import AnalystAgent, ProfileView
from kforge.agents.feedback import AttemptOutcome
from kforge.agents.generator import GenerationAgent
from kforge.agents.targets import Target
from kforge.llm.budget import Budget, BudgetExceeded
from kforge.llm.messages import Completion, Usage
from kforge.pipelines.events import Reporter
from kforge.pipelines.judging import ANALYSIS_VIEW, AttemptJudge, AttemptRecord, Lineage
from kforge.pipelines.loop import KForgeLoop, LoopSettings, is_faster
from kforge.pipelines.stop import StopKind
from kforge.store import Store
from kforge.verify.verdict import Outcome, TimingStats, Verdict

TARGET = Target("cpu", "cpp")


def source(tag: str) -> str:
    return f"import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    TAG = {tag!r}\n"


def verdict_for(tag: str) -> Verdict:
    """The judge's script: the tag says what the candidate is ('bad', 'wrong', 'ms=2.0')."""
    base = {"platform": "cpu", "language": "cpp"}
    if tag.startswith("bad"):
        return Verdict(verdict=Outcome.COMPILE_ERROR, reason="error: nope", **base)
    if tag == "wrong":
        return Verdict(verdict=Outcome.INCORRECT, reason="mismatch", max_abs_error=1.0, **base)
    ms = float(tag.split("=")[1])
    stats = TimingStats(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=ms * 0.01, repeats=100)
    return Verdict(verdict=Outcome.CORRECT, reason="ok", runtime_ms=ms, timing=stats, **base)


class ScriptedChat:
    """Answers generation requests from a list of tags and analyst requests with a fixed recommendation."""

    def __init__(self, tags: list[str], delay_s: float = 0.0, budget: Budget | None = None) -> None:
        self.tags = list(tags)
        self.delay_s = delay_s
        self.budget = budget
        self.lock = threading.Lock()
        self.concurrent = 0
        self.most_concurrent = 0
        self.requests: list[str] = []

    def complete(self, messages, *, max_tokens, temperature=None, on_delta=None):
        if self.budget is not None:
            self.budget.check()
        with self.lock:
            self.concurrent += 1
            self.most_concurrent = max(self.most_concurrent, self.concurrent)
            text = messages[-1].parts[0].text
            self.requests.append(text)
            analyst = "Give one recommendation." in text
            reply = "Recommendation: go faster." if analyst else f"```python\n{source(self.tags.pop(0))}```"
        time.sleep(self.delay_s)
        with self.lock:
            self.concurrent -= 1
        completion = Completion(text=reply, usage=Usage(prompt_tokens=10, completion_tokens=5), model="scripted",
                                latency_s=self.delay_s)
        if self.budget is not None:
            self.budget.charge(completion)
        return completion


def run_loop(tmp_path: Path, tags: list[str], settings: LoopSettings, chat: ScriptedChat | None = None):
    chat = chat or ScriptedChat(tags)
    store = Store(tmp_path / "runs.db")
    run = store.create_run(command="optimize")
    judged: list[str] = []

    def judge(text: str) -> Verdict:
        tag = text.split("TAG = ")[1].strip().strip("'")
        judged.append(tag)
        return verdict_for(tag)

    loop = KForgeLoop(generator=GenerationAgent(chat, TARGET, "problem"), analyst=AnalystAgent(chat, TARGET, "p"),
                      evaluate=judge, profile=lambda record: ProfileView(text="profile"), store=store,
                      run_id=run.id, settings=settings)
    return loop.run(), judged, chat, store


def test_functional_pass_refines_until_correct_then_optimizes(tmp_path: Path) -> None:
    result, judged, chat, _ = run_loop(tmp_path, ["bad", "wrong", "ms=2.0", "ms=1.0", "ms=0.99"],
                                       LoopSettings(attempts=5, rounds=2, patience=2))
    assert judged == ["bad", "wrong", "ms=2.0", "ms=1.0", "ms=0.99"]
    assert [a.outcome for a in result.attempts[:3]] == [AttemptOutcome.BUILD_FAILURE, AttemptOutcome.MISMATCH,
                                                        AttemptOutcome.CORRECT]
    assert result.best is not None and result.best.verdict.runtime_ms == 1.0  # 0.99 is within 2%
    assert "error: nope" in chat.requests[1]  # feedback reached the model
    assert result.stop_reason == "finished 2 optimization rounds"


def test_gives_up_after_the_attempt_budget(tmp_path: Path) -> None:
    result, judged, _, _ = run_loop(tmp_path, ["bad", "bad2", "wrong"], LoopSettings(attempts=3))
    assert result.best is None and len(judged) == 3
    assert result.stop_reason == "no correct candidate within 3 attempts"


def test_stops_when_rounds_stop_improving(tmp_path: Path) -> None:
    result, judged, _, _ = run_loop(tmp_path, ["ms=1.0", "ms=1.0", "ms=3.0", "ms=0.1"],
                                    LoopSettings(rounds=5, patience=2))
    assert judged == ["ms=1.0", "ms=3.0"]  # the second ms=1.0 is the same source: judged once, reused
    assert result.stop_reason == "no improvement in 2 consecutive rounds"
    assert result.stop is StopKind.FINISHED and not result.stop.can_go_on


def test_candidates_are_requested_concurrently(tmp_path: Path) -> None:
    chat = ScriptedChat(["wrong", "ms=3.0", "ms=2.0"], delay_s=0.3)
    result, judged, chat, _ = run_loop(tmp_path, [], LoopSettings(attempts=3, candidates=3, rounds=0), chat)
    assert chat.most_concurrent == 3
    assert sorted(judged) == ["ms=2.0", "ms=3.0", "wrong"]
    assert result.best is not None and result.best.verdict.runtime_ms == 2.0


def test_budget_reached_ends_the_run_cleanly(tmp_path: Path) -> None:
    budget = Budget(max_calls=2)
    chat = ScriptedChat(["bad", "bad2", "ms=1.0"], budget=budget)
    result, judged, _, store = run_loop(tmp_path, [], LoopSettings(attempts=5), chat)
    assert judged == ["bad", "bad2"] and result.best is None
    assert result.stop_reason.startswith("budget reached")
    assert result.stop is StopKind.LLM_BUDGET and result.stop.can_go_on  # what the CLI's resume hint reads
    assert len(store.attempts_of(1)) == 2


def test_is_faster_needs_more_than_noise() -> None:
    def timed(ms: float, iqr: float, repeats: int = 100) -> Verdict:
        stats = TimingStats(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=iqr, repeats=repeats)
        return Verdict(verdict=Outcome.CORRECT, reason="", platform="cpu", language="cpp", runtime_ms=ms,
                       timing=stats)

    assert is_faster(timed(1.0, 0.01), timed(2.0, 0.01))
    assert not is_faster(timed(1.99, 0.001), timed(2.0, 0.001))  # under 2%
    assert not is_faster(timed(1.8, 2.0, 10), timed(2.0, 2.0, 10))  # 10% but inside very noisy measurements
    assert is_faster(timed(0.2, 2.0, 100), timed(2.0, 2.0, 100))


def test_budget_exceeded_is_an_llm_error() -> None:
    with pytest.raises(BudgetExceeded):
        Budget(max_calls=0).check()


def test_a_resumed_run_gives_its_analyst_the_stored_profile(tmp_path: Path) -> None:
    """The view the analyst read is stored with the kernel; a second loop over the same run reads it back
    instead of profiling again (a fresh profile would differ a little and miss the LLM cache)."""
    settings = LoopSettings(attempts=2, rounds=1, patience=1)
    result, _, _, store = run_loop(tmp_path, ["ms=2.0", "ms=3.0"], settings)
    assert result.best is not None
    stored = [p for p in store.profiles_of(result.best.attempt_id) if p.kind == ANALYSIS_VIEW]
    assert [p.data["text"] for p in stored] == ["profile"]

    def must_not_profile(record: AttemptRecord) -> ProfileView:
        raise AssertionError(f"attempt {record.attempt_id} profiled again")

    chat = ScriptedChat(["ms=2.0", "ms=3.0"])
    again = KForgeLoop(generator=GenerationAgent(chat, TARGET, "problem"), analyst=AnalystAgent(chat, TARGET, "p"),
                       evaluate=lambda text: verdict_for(text.split("TAG = ")[1].strip().strip("'")),
                       profile=must_not_profile, store=store, run_id=1, settings=settings).run()
    assert again.best is not None and again.best.attempt_id == result.best.attempt_id
    assert any("profile" in request for request in chat.requests if "Give one recommendation." in request)


def test_progress_lines_number_attempts_within_the_run_and_a_resumed_run_counts_on(tmp_path: Path) -> None:
    _, _, _, store = run_loop(tmp_path, ["bad", "ms=2.0"], LoopSettings(attempts=2, rounds=0))  # run 1: rows 1, 2
    run_id = store.create_run(command="optimize").id
    said: list[str] = []

    def loop(tags: list[str], settings: LoopSettings):
        chat = ScriptedChat(tags)
        return KForgeLoop(generator=GenerationAgent(chat, TARGET, "problem"), analyst=AnalystAgent(chat, TARGET, "p"),
                          evaluate=lambda text: verdict_for(text.split("TAG = ")[1].strip().strip("'")),
                          profile=lambda record: ProfileView(text="profile"), store=store, run_id=run_id,
                          settings=settings, on_event=lambda event: said.append(event.text)).run()

    first = loop(["wrong", "ms=2.0"], LoopSettings(attempts=2, rounds=0))
    assert [(r.attempt_id, r.number) for r in first.attempts] == [(3, 1), (4, 2)]
    assert "attempt 1 (generate): mismatch" in said and "attempt 2 (repair): correct 2 ms" in said

    said.clear()
    store.resume_run(run_id)
    resumed = loop(["wrong", "ms=2.0", "ms=1.0"], LoopSettings(attempts=2, rounds=1, patience=1))
    assert [r.number for r in resumed.attempts] == [1, 2, 3]  # the replayed two keep their numbers
    assert "attempt 2 (repair): correct 2 ms (judged before)" in said
    assert "round 1: profiling the best candidate (attempt 2)" in said
    assert "attempt 3 (optimize): correct 1 ms" in said and "round 1: attempt 3 is the new best (2 -> 1 ms)" in said
    assert [a.number for a in store.attempts_of(run_id)] == [1, 2, 3]


class LongWindedChat(ScriptedChat):
    """An analyst that answers in paragraphs, without the `Reason:` line that ends the recommendation."""

    REPLY = ("Recommendation: fuse the scale into the kernel's store, so that each element is written once.\n\n"
             "The profile shows two passes over the output, one for the leaky slope and one for the scale; "
             "together they read and write every element twice. " * 3)

    def complete(self, messages, *, max_tokens, temperature=None, on_delta=None):
        completion = super().complete(messages, max_tokens=max_tokens, temperature=temperature, on_delta=on_delta)
        if completion.text.startswith("Recommendation:"):
            return Completion(text=self.REPLY, usage=completion.usage, model="scripted", latency_s=0.0)
        return completion


def test_a_starting_kernel_and_the_analysts_reply_are_said_once_each_in_one_line(tmp_path: Path) -> None:
    """As the engine's start hands its kernel to the loop: its attempt line is said by the engine's judge, and the
    loop, starting from it, says it no more (a log had it twice); the analyst's reply is a line, shortened."""
    store = Store(tmp_path / "runs.db")
    run_id = store.create_run(command="optimize").id
    said: list[str] = []
    start = source("ms=2.0")
    engine = AttemptJudge(store, run_id, TARGET, lambda text: verdict_for("ms=2.0"),
                          Reporter(lambda event: said.append(event.text)),
                          lambda record: None)
    engine.judge(start, Lineage("generate", 0, None, "builtin"))
    chat = LongWindedChat(["ms=1.0"])
    result = KForgeLoop(generator=GenerationAgent(chat, TARGET, "problem"), analyst=AnalystAgent(chat, TARGET, "p"),
                        evaluate=lambda text: verdict_for(text.split("TAG = ")[1].strip().strip("'")),
                        profile=lambda record: ProfileView(text="profile"), store=store, run_id=run_id,
                        settings=LoopSettings(rounds=1, patience=1),
                        on_event=lambda event: said.append(event.text)).run(start)
    assert result.best is not None and result.best.number == 2
    assert [line for line in said if line.startswith("attempt 1 ")] == ["attempt 1 (generate): correct 2 ms"]
    advice = [line for line in said if "analyst recommends" in line]
    assert len(advice) == 1 and "\n" not in advice[0] and len(advice[0]) <= 140 and advice[0].endswith("…"), advice
    assert advice[0].startswith("round 1: analyst recommends: fuse the scale into the kernel's store")
    assert result.recommendations == [" ".join(LongWindedChat.REPLY.removeprefix("Recommendation:").split())]


def test_the_resume_hint_reads_the_stop_kind_not_its_prose() -> None:
    from kforge.cli import _resume_hint

    exhausted = BudgetExceeded("anything at all", limit="max_usd")
    assert StopKind.of_budget(exhausted) is StopKind.LLM_BUDGET
    assert StopKind.of_budget(BudgetExceeded("anything", limit="max_wall_s")) is StopKind.TIME_BUDGET
    assert _resume_hint(StopKind.LLM_BUDGET, "kforge optimize --resume 3").endswith("and a larger budget "
                                                                                   "(--max-usd, --max-calls, or "
                                                                                   "KFORGE_MAX_TOKENS)")
    assert _resume_hint(StopKind.TIME_BUDGET, "kforge optimize --resume 3") == "kforge optimize --resume 3"
