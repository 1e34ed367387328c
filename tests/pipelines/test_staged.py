"""The staged pipeline's decisions: a scripted model on 127.0.0.1, a scripted judge, the real knowledge base.

The judge reads a tag in the candidate ('ms=2.0' correct in 2 ms, 'wrong' a mismatch) so every decision is
known in advance; the end-to-end test (test_staged_e2e.py) runs the real harness.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from kforge.agents.analyst import ProfileView
from kforge.agents.analyzer import AnalyzerAgent
from kforge.agents.generator import GenerationAgent
from kforge.agents.planner import PlannerAgent
from kforge.agents.stage_writer import StageWriter
from kforge.agents.targets import Target
from kforge.knowledge import Violation
from kforge.llm import make_chat_model
from kforge.llm.budget import Budget
from kforge.pipelines.events import Event
from kforge.pipelines.judging import KB_REJECTED
from kforge.pipelines.loop import KForgeLoop, LoopSettings
from kforge.pipelines.recording import RecordingChatModel
from kforge.pipelines.stage_knowledge import KnowledgeAccess
from kforge.pipelines.staged import StagedAgents, StagedPipeline, StagedSettings
from kforge.pipelines.stop import StopKind
from kforge.reports.trial_tree import stage_gains, trial_tree
from kforge.store import Store
from tests.conftest import PROBLEMS
from tests.llm.llm_servers import FAST_RETRY, ScriptedServer, openai_completion, openai_stream
from tests.pipelines.test_loop import verdict_for

TARGET = Target("cuda", "triton")
PROBLEM = (PROBLEMS / "leaky_scale.py").read_text()


def kernel(tag: str, warps: int = 4) -> str:
    return ("import torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
            "def _k(x_ptr, BLOCK: tl.constexpr):\n    pass\n\n\nclass ModelNew(nn.Module):\n"
            f"    TAG = {tag!r}\n\n    def forward(self, x):\n        _k[(1,)](x, BLOCK=1024, num_warps={warps})\n"
            "        return x\n")


def code(tag: str, warps: int = 4) -> str:
    return f"Here it is.\n```python\n{kernel(tag, warps)}```\n"


def issues(*pairs: tuple[str, str]) -> str:
    return json.dumps({"issues": [{"stage": s, "issue": i, "evidence": "profile"} for s, i in pairs]})


# The whole scenario: fusion is accepted on its second try (the first breaks a knowledge-base rule and is never
# run), a fresh analysis re-plans, memory_access fails its two tries and is skipped, autotuning is accepted,
# and a last analysis finds nothing more.
SCRIPT = [
    issues(("fusion", "the scale is a second pass"), ("autotuning", "BLOCK is fixed"), ("magic", "go faster")),
    '{"order": ["autotuning", "fusion"]}',
    code("ms=1.0", warps=3),
    code("ms=1.0"),
    issues(("memory_access", "loads are strided"), ("autotuning", "BLOCK is fixed")),
    '{"order": ["memory_access", "autotuning"]}',
    code("wrong"),
    code("ms=0.99"),
    code("ms=0.5"),
    '{"issues": []}',
]


class Judge:
    def __init__(self) -> None:
        self.judged: list[str] = []

    def __call__(self, source: str) -> object:
        tag = source.split("TAG = ")[1].split("\n")[0].strip("'")
        self.judged.append(tag)
        verdict = verdict_for(tag)
        return verdict.model_copy(update={"platform": "cuda", "language": "triton"})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


class Harness:
    """One staged run's parts: the store, the scripted judge, the profiler's calls, the events."""

    def __init__(self, server: ScriptedServer, tmp_path: Path) -> None:
        self.server = server
        self.store = Store(tmp_path / "runs.db")
        self.run_id = self.store.create_run(command="optimize").id
        self.judge = Judge()
        self.profiled: list[int] = []
        self.events: list[str] = []
        self.kinds: dict[str, str] = {}  # an event's text -> its kind

    def hear(self, event: Event) -> None:
        self.events.append(event.text)
        self.kinds[event.text] = event.kind

    def pipeline(self, settings: StagedSettings, budget: Budget | None = None,
                 knowledge: KnowledgeAccess | None = None) -> StagedPipeline:
        model = make_chat_model("openai:scripted", base_url=f"{self.server.url}/v1", api_key="sk-test",
                                retry=FAST_RETRY)
        chat = RecordingChatModel(model, self.store, self.run_id, budget=budget)
        agents = StagedAgents(AnalyzerAgent(chat, TARGET, PROBLEM), PlannerAgent(chat, TARGET),
                              StageWriter(chat, TARGET, PROBLEM))
        loop = KForgeLoop(generator=GenerationAgent(chat, TARGET, PROBLEM), analyst=None,  # type: ignore[arg-type]
                          evaluate=self.judge, profile=self.profile, store=self.store, run_id=self.run_id,
                          settings=LoopSettings(attempts=2, rounds=0), on_event=self.hear)
        knowledge = knowledge or KnowledgeAccess.load("cuda", "triton", "NVIDIA H200", PROBLEM, 2000)
        return StagedPipeline(agents=agents, knowledge=knowledge, evaluate=self.judge, profile=self.profile,
                              store=self.store, run_id=self.run_id, settings=settings, functional_pass=loop.run,
                              on_event=self.hear)

    def profile(self, record: object) -> ProfileView:
        self.profiled.append(record.attempt_id)  # type: ignore[attr-defined]
        return ProfileView(text=f"profile of attempt {record.attempt_id}")  # type: ignore[attr-defined]

    def prompts(self) -> list[str]:
        return [r.body["messages"][-1]["content"] for r in self.server.received]


SETTINGS = StagedSettings(retries=1)


def test_the_whole_scenario(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*(openai_completion(reply) for reply in SCRIPT))
    harness = Harness(server, tmp_path)
    result = harness.pipeline(SETTINGS).run(kernel("ms=2.0"))
    prompts = harness.prompts()
    assert len(prompts) == len(SCRIPT)

    # the knowledge base caught num_warps=3 before any hardware run, and the writer was told why
    assert harness.judge.judged == ["ms=2.0", "ms=1.0", "wrong", "ms=0.99", "ms=0.5"]
    attempts = harness.store.attempts_of(harness.run_id)
    rejected = attempts[1]
    assert harness.store.evaluation_of(rejected.id).outcome == KB_REJECTED  # type: ignore[union-attr]
    assert rejected.stage == "fusion" and rejected.parent_attempt_id == attempts[0].id
    assert "num_warps=3" in prompts[3] and "not a power of two" in prompts[3] and "triton-num-warps" in prompts[3]

    # the planner proposed autotuning first; the dependency put fusion first; re-planning after fusion
    assert result.plans == [("fusion", "autotuning"), ("memory_access", "autotuning"), ()]
    assert "- autotuning runs after fusion" in prompts[1] and "BLOCK is fixed" in prompts[1]
    assert "the scale is a second pass" in prompts[2] and "Stage: kernel fusion" in prompts[2]
    assert "profile of attempt 3" in prompts[4]  # the fresh analysis reads the accepted kernel
    assert any("unknown stage 'magic'" in e for e in harness.events)

    # memory_access failed its 1 + 1 tries and was skipped; the failure was fed back
    assert "does not match the reference" in prompts[7]
    steps = harness.store.stages_of(harness.run_id)
    assert [(s.stage, s.status, s.detail["tries"]) for s in steps] == [
        ("fusion", "accepted", 2), ("memory_access", "skipped", 2), ("autotuning", "accepted", 1)]
    assert steps[1].input_attempt_id == steps[2].input_attempt_id == steps[0].output_attempt_id

    # autotuning was accepted on the kernel fusion left (not on memory_access's failures), then nothing was left
    assert result.best is not None and result.best.runtime_ms == 0.5
    assert result.stop_reason == "ran 3 stage(s), 2 accepted"
    assert [s.accepted is not None for s in result.stages] == [True, False, True]
    assert "stage memory_access: skipped: no candidate was correct and faster in 2 tries" in harness.events
    assert harness.kinds["stage memory_access: skipped: no candidate was correct and faster in 2 tries"] == "stage"
    assert {harness.kinds[text] for text in harness.events if text.startswith("attempt ")} == {"attempt"}
    assert {harness.kinds[text] for text in harness.events if text.startswith("plan: ")} == {"plan"}


def test_the_report_shares_the_speedup_among_stages(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*(openai_completion(reply) for reply in SCRIPT))
    harness = Harness(server, tmp_path)
    other = harness.store.create_run(command="optimize").id  # its attempt takes row id 1: the tree shows numbers
    harness.store.record_attempt(other, source="# other", language="triton", platform="cuda", made_by="test")
    harness.pipeline(SETTINGS).run(kernel("ms=2.0"))
    assert [a.id for a in harness.store.attempts_of(harness.run_id)] == [2, 3, 4, 5, 6, 7]
    gains = stage_gains(harness.store, harness.run_id)
    # 2 -> 1 ms and 1 -> 0.5 ms: each halves the time, so each has half of the log-speedup
    assert [g.share for g in gains] == pytest.approx([0.5, 0.0, 0.5])
    console = Console(width=200, record=True)
    console.print(trial_tree(harness.store, harness.run_id))
    text = console.export_text()
    assert "start attempt 1 (2 ms) -> final attempt 6 (0.5 ms), 4.00x" in text
    assert "stage 1: fusion (1 issue(s)): 2 ms -> 1 ms; share of speedup 50%" in text
    assert "stage 2: memory_access (1 issue(s)): skipped after 2 tries; share of speedup 0%" in text
    assert f"attempt 2 try 1 (fusion:optimize): {KB_REJECTED} [triton-num-warps]" in text
    assert "plan: memory_access > autotuning" in text


def test_a_resumed_run_repeats_the_decisions_without_redoing_work(server: ScriptedServer, tmp_path: Path) -> None:
    # The budget stops the run after the fusion stage's two calls; the resumed run replays them from the store.
    server.push(*(openai_completion(reply) for reply in SCRIPT[:4]))
    harness = Harness(server, tmp_path)
    first = harness.pipeline(SETTINGS, budget=Budget(max_calls=4)).run(kernel("ms=2.0"))
    assert first.stop_reason.startswith("budget reached") and first.stop is StopKind.LLM_BUDGET
    assert harness.judge.judged == ["ms=2.0", "ms=1.0"] and harness.profiled == [1, 3]

    server.push(*(openai_completion(reply) for reply in SCRIPT[4:]))
    resumed = harness.pipeline(SETTINGS).run(kernel("ms=2.0"))
    assert len(server.received) == len(SCRIPT)  # the first four answers came from the store
    assert harness.judge.judged == ["ms=2.0", "ms=1.0", "wrong", "ms=0.99", "ms=0.5"]  # nothing judged twice
    assert harness.profiled == [1, 3, 6]  # the analyzer's view of a kernel is reused, not measured again
    assert resumed.plans == [("fusion", "autotuning"), ("memory_access", "autotuning"), ()]
    assert resumed.best is not None and resumed.best.runtime_ms == 0.5
    assert len(harness.store.attempts_of(harness.run_id)) == 6
    assert [s.stage for s in harness.store.stages_of(harness.run_id)] == ["fusion", "memory_access", "autotuning"]


def test_without_a_kernel_the_loop_writes_the_first_one(server: ScriptedServer, tmp_path: Path) -> None:
    # the loop's generation replies stream; the analyzer's does not
    server.push(openai_stream([code("wrong")]), openai_stream([code("ms=3.0")]), openai_completion('{"issues": []}'))
    harness = Harness(server, tmp_path)
    result = harness.pipeline(SETTINGS).run()
    assert harness.judge.judged == ["wrong", "ms=3.0"]
    assert result.start is not None and result.start.runtime_ms == 3.0 and result.best == result.start
    assert [a.made_by for a in harness.store.attempts_of(harness.run_id)] == ["generator:generate",
                                                                              "generator:repair"]
    assert result.stop_reason == "the analyzer found no issue for the stages of this run"


def test_a_starting_kernel_that_is_not_correct_stops_the_run(server: ScriptedServer, tmp_path: Path) -> None:
    harness = Harness(server, tmp_path)
    result = harness.pipeline(SETTINGS).run(kernel("wrong"))
    assert result.best is None and server.received == []
    assert result.stop_reason.startswith("the starting kernel is not correct (mismatch)")


def test_stages_not_selected_are_never_run(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(openai_completion(issues(("fusion", "fuse"), ("autotuning", "tune"))),
                openai_completion(code("ms=1.99")), openai_completion(code("ms=1.98")))  # within 2%
    harness = Harness(server, tmp_path)
    result = harness.pipeline(StagedSettings(stages=("autotuning",), retries=1)).run(kernel("ms=2.0"))
    assert "- fusion:" not in harness.prompts()[0] and "- autotuning:" in harness.prompts()[0]
    assert [s.stage for s in result.stages] == ["autotuning"] and result.stages[0].accepted is None
    assert any("stage fusion, which is not open" in e for e in harness.events)


def test_knowledge_base_warnings_do_not_stop_a_run_but_reach_the_writer(server: ScriptedServer,
                                                                        tmp_path: Path) -> None:
    server.push(*(openai_completion(reply) for reply in [
        issues(("fusion", "fuse")), code("ms=1.99"), code("ms=1.0")]))
    harness = Harness(server, tmp_path)
    real = KnowledgeAccess.load("cuda", "triton", "NVIDIA H200", PROBLEM, 2000)
    warned = KnowledgeAccess(real.retrieve, lambda source: [Violation("tile-hint", "warning", "prefer 2-D tiles", 7)])
    result = harness.pipeline(StagedSettings(stages=("fusion",), retries=1), knowledge=warned).run(kernel("ms=2.0"))
    assert harness.judge.judged == ["ms=2.0", "ms=1.99", "ms=1.0"]  # warned candidates still run
    retry = harness.prompts()[2]
    assert "not faster than the stage's input" in retry and "1.99 ms against 2 ms" in retry
    assert "The knowledge base also warns:\n- tile-hint (line 7): prefer 2-D tiles" in retry
    assert result.best is not None and result.best.runtime_ms == 1.0
    assert len(server.received) == 3  # no stage left open: no fresh analysis
