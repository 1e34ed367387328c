"""The builtin engine serves the staged pipeline's autotuning stage: its tuned candidate is try 0 of the stage,
accepted by the stages' rule, and the model's tries run when it is not accepted or the engine cannot lower the
problem. A scripted model on 127.0.0.1 and a scripted judge (tests/pipelines/test_staged.py); the engine's
variants are its real sources for the problem, which the judge gives the timing the test sets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kforge.agents.analyzer import AnalyzerAgent
from kforge.agents.generator import GenerationAgent
from kforge.agents.planner import PlannerAgent
from kforge.agents.stage_writer import StageWriter
from kforge.engine.propose import propose
from kforge.llm import make_chat_model
from kforge.pipelines.builtin import Search, default_variants, stage_engine
from kforge.pipelines.loop import KForgeLoop, LoopSettings
from kforge.pipelines.recording import RecordingChatModel
from kforge.pipelines.stage_knowledge import KnowledgeAccess
from kforge.pipelines.staged import StagedAgents, StagedPipeline, StagedResult, StagedSettings
from kforge.problem import Problem, load_problem
from kforge.verify.search import Tried
from kforge.verify.verdict import Verdict
from tests.conftest import PROBLEMS
from tests.llm.llm_servers import FAST_RETRY, ScriptedServer, openai_completion
from tests.pipelines.test_loop import verdict_for
from tests.pipelines.test_staged import TARGET, Harness, Judge, code, issues, kernel

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

LOWERED = load_problem(PROBLEMS / "engine" / "channel_gate.py")
NOT_LOWERED = load_problem(PROBLEMS / "engine" / "ea_unsupported_sort.py")  # a sort: not lowered
AUTOTUNING_ONLY = StagedSettings(stages=("autotuning",), retries=1)
ENGINE_SOURCES = [v.source for v in propose(LOWERED, "triton", limit=default_variants("cuda", "triton")).variants]


class EngineJudge(Judge):
    """The scripted judge, plus a fixed verdict for the engine's variants (they carry no tag)."""

    def __init__(self, engine_tag: str) -> None:
        super().__init__()
        self.engine_tag = engine_tag

    def __call__(self, source: str) -> object:
        if "TAG = " in source:
            return super().__call__(source)
        self.judged.append(f"engine {ENGINE_SOURCES.index(source)}" if source in ENGINE_SOURCES else "engine searched")
        return verdict_for(self.engine_tag).model_copy(update={"platform": "cuda", "language": "triton"})


class EngineHarness(Harness):
    def __init__(self, server: ScriptedServer, tmp_path: Path, engine_tag: str) -> None:
        super().__init__(server, tmp_path)
        self.judge = EngineJudge(engine_tag)

    def engine_pipeline(self, settings: StagedSettings, problem: Problem = LOWERED,
                        search: Search | None = None) -> StagedPipeline:
        model = make_chat_model("openai:scripted", base_url=f"{self.server.url}/v1", api_key="sk-test",
                                retry=FAST_RETRY)
        chat = RecordingChatModel(model, self.store, self.run_id)
        text = problem.source
        agents = StagedAgents(AnalyzerAgent(chat, TARGET, text), PlannerAgent(chat, TARGET),
                              StageWriter(chat, TARGET, text))
        loop = KForgeLoop(generator=GenerationAgent(chat, TARGET, text), analyst=None,  # type: ignore[arg-type]
                          evaluate=self.judge, profile=self.profile, store=self.store, run_id=self.run_id,
                          settings=LoopSettings(attempts=2, rounds=0), on_event=self.hear)
        knowledge = KnowledgeAccess.load("cuda", "triton", "NVIDIA H200", text, 2000)
        return StagedPipeline(agents=agents, knowledge=knowledge,
                              evaluate=self.judge, profile=self.profile, store=self.store, run_id=self.run_id,
                              settings=settings, functional_pass=loop.run, on_event=self.hear,
                              engine=stage_engine(problem, vendor_gemm=False, search=search))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def engine_attempts(harness: Harness) -> list[object]:
    return [a for a in harness.store.attempts_of(harness.run_id) if a.made_by.startswith("builtin")]


def test_a_faster_engine_candidate_is_accepted_without_asking_the_model(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))))
    harness = EngineHarness(server, tmp_path, "ms=0.5")
    result = harness.engine_pipeline(AUTOTUNING_ONLY).run(kernel("ms=2.0"))
    assert len(server.received) == 1  # the analyzer only: the stage writer was never asked
    assert harness.judge.judged == ["ms=2.0", *(f"engine {i}" for i in range(len(ENGINE_SOURCES)))]

    engine = engine_attempts(harness)
    assert len(engine) == len(ENGINE_SOURCES)
    assert all((a.made_by, a.stage, a.round) == ("builtin:optimize", "autotuning", 0) for a in engine)  # type: ignore[attr-defined]
    assert all(a.parent_attempt_id == 1 for a in engine)  # type: ignore[attr-defined]
    [step] = harness.store.stages_of(harness.run_id)
    assert (step.stage, step.status, step.input_attempt_id) == ("autotuning", "accepted", 1)
    assert step.output_attempt_id == engine[0].id  # type: ignore[attr-defined]  # equal timings: the default
    assert step.detail["reason"].startswith("accepted the builtin engine's tuned candidate: 2 -> 0.5 ms")
    assert result.best is not None and result.best.source == ENGINE_SOURCES[0] and result.best.runtime_ms == 0.5


def run_not_faster(harness: EngineHarness) -> StagedResult:
    return harness.engine_pipeline(AUTOTUNING_ONLY).run(kernel("ms=2.0"))


def test_an_engine_candidate_within_noise_leaves_the_stage_to_the_model(server: ScriptedServer,
                                                                         tmp_path: Path) -> None:
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))), openai_completion(code("ms=1.0")))
    harness = EngineHarness(server, tmp_path, "ms=1.99")  # within 2% of the input: not faster
    result = run_not_faster(harness)
    assert len(server.received) == 2 and "Stage: autotuning" in harness.prompts()[1]
    assert harness.judge.judged[-1] == "ms=1.0"
    assert any("builtin engine: attempt 2 is not faster; the model tries" in e for e in harness.events)
    [stage] = result.stages
    assert [a.stage for a in stage.attempts] == ["autotuning"] * (len(ENGINE_SOURCES) + 1)
    assert stage.accepted is not None and stage.accepted.runtime_ms == 1.0 and stage.accepted.round == 1
    step = harness.store.stages_of(harness.run_id)[0]
    assert step.detail["tries"] == len(ENGINE_SOURCES) + 1 and step.output_attempt_id == stage.accepted.attempt_id


def test_a_resumed_run_judges_the_engines_variants_once(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))), openai_completion(code("ms=1.0")))
    harness = EngineHarness(server, tmp_path, "ms=1.99")
    first = run_not_faster(harness)
    judged, attempts = list(harness.judge.judged), len(harness.store.attempts_of(harness.run_id))
    resumed = run_not_faster(harness)  # the same run again: LLM answers from the store, verdicts from the store
    assert harness.judge.judged == judged and len(server.received) == 2
    assert len(harness.store.attempts_of(harness.run_id)) == attempts
    assert resumed.best is not None and first.best is not None and resumed.best.attempt_id == first.best.attempt_id


def test_a_problem_the_engine_cannot_lower_runs_the_stage_as_before(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))), openai_completion(code("ms=1.0")))
    harness = EngineHarness(server, tmp_path, "ms=0.5")
    result = harness.engine_pipeline(AUTOTUNING_ONLY, problem=NOT_LOWERED).run(kernel("ms=2.0"))
    assert "stage autotuning: builtin engine: cannot lower aten.sort; the model's tries only" in harness.events
    assert harness.judge.judged == ["ms=2.0", "ms=1.0"] and engine_attempts(harness) == []
    assert result.best is not None and result.best.runtime_ms == 1.0


def test_an_untimed_input_is_never_replaced(server: ScriptedServer, tmp_path: Path) -> None:
    # the engine's variants are correct but the stage input has no timing to beat (is_faster needs both)
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))), openai_completion(code("wrong")),
                openai_completion(code("wrong")))
    harness = EngineHarness(server, tmp_path, "ms=0.5")
    untimed = harness.judge

    def judge_without_timing(source: str) -> object:
        verdict: Verdict = untimed(source)  # type: ignore[assignment]
        return verdict.model_copy(update={"timing": None, "runtime_ms": None}) if "ms=2.0" in source else verdict

    harness.judge = judge_without_timing  # type: ignore[assignment]
    result = harness.engine_pipeline(AUTOTUNING_ONLY).run(kernel("ms=2.0"))
    assert result.stages[0].accepted is None and len(server.received) == 3


def test_with_a_search_the_stage_judges_only_the_quickest_variant(server: ScriptedServer, tmp_path: Path) -> None:
    """Where the platform times the language, the stage's engine ranks every variant in the search's worker and
    the pipeline's judge sees only the quickest (its search time alone: none other is close)."""
    server.push(openai_completion(issues(("autotuning", "BLOCK is fixed"))))
    searched: list[list[str]] = []

    def search(sources: list[str], floors: list[float | None], budget_s: float | None) -> list[Tried]:
        searched.append(sources)
        return [Tried(index, median_ms=0.2 if index == 1 else 3.0, iqr_ms=0.0) for index in range(len(sources))]

    harness = EngineHarness(server, tmp_path, "ms=0.5")
    result = harness.engine_pipeline(AUTOTUNING_ONLY, search=search).run(kernel("ms=2.0"))
    [sources] = searched
    assert set(sources) >= set(ENGINE_SOURCES)  # every variant the backend offers, searched
    engine = engine_attempts(harness)
    assert len(harness.judge.judged) == 2 and [a.source for a in engine] == [sources[1]]  # type: ignore[attr-defined]
    assert all((a.stage, a.round) == ("autotuning", 0) for a in engine)  # type: ignore[attr-defined]
    assert result.best is not None and result.best.source == sources[1]
