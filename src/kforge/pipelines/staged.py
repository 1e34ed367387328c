"""The staged (Xe-Forge) pipeline: analyzer -> planner -> stages, each stage a CoVeR loop.

Start from a correct kernel: the user's (`--kernel`), or the KForge loop's first correct candidate. The
analyzer reads the kernel, the problem and the profile and reports issues by stage; the planner orders the
stages that have issues (the model proposes, hard dependencies are enforced). Each stage runs CoVeR
(`cover.py`); an accepted stage's kernel becomes the input of the next, and a fresh analysis of it re-plans
the stages still open. A stage that finds nothing better is skipped; the kernel stays as it was.

Each stage's outcome is a row in the store's `stages` table (input, accepted output, issues, the plan it
ran under); its attempts carry the stage's name and point at the stage's input. A resumed run replays the
same decisions: LLM answers come from the store in order, judged attempts keep their verdicts, and the
profile text the analyzer read is stored with the kernel, so the analyzer is asked the same question.

The autotuning stage is served by the builtin engine first, when the run has one (`engine`) and it can lower
the problem: its variants, searched through the harness, are try 0 of the stage (made by `builtin`). Its tuned
candidate is accepted by the stages' rule (correct, faster than the stage's input beyond noise), and then the
model is not asked; otherwise the model's tries run as in any stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kforge.agents.analyzer import Analysis, AnalyzerAgent, KernelView
from kforge.agents.feedback import AttemptOutcome
from kforge.agents.planner import Plan, PlannerAgent
from kforge.agents.stage_writer import StageWriter
from kforge.engine.capture import LoweringError
from kforge.knowledge import Retrieval
from kforge.knowledge.stages import STAGES
from kforge.llm.budget import BudgetExceeded
from kforge.llm.errors import LLMError
from kforge.pipelines.cover import Cover, StageResult
from kforge.pipelines.events import EventSink, Reporter
from kforge.pipelines.judging import AttemptJudge, AttemptRecord, Evaluator, Lineage, Profiler, analysis_view
from kforge.pipelines.loop import LoopResult
from kforge.pipelines.stage_knowledge import KnowledgeAccess
from kforge.pipelines.stop import StopKind
from kforge.store import Store
from kforge.verify.compare import is_faster

# The stage the builtin engine serves, and who its attempts are made by.
ENGINE_STAGE = "autotuning"
ENGINE = "builtin"


@dataclass(frozen=True)
class StagedSettings:
    stages: tuple[str, ...] = STAGES  # the stages this run may use (after --stages)
    retries: int = 2  # retries per stage after its first try
    replan: bool = True  # analyze again after each accepted stage
    knowledge_tokens: int = 2000  # token budget of the knowledge text per stage prompt

    def for_record(self) -> dict[str, Any]:
        return {**asdict(self), "stages": list(self.stages)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> StagedSettings:
        return cls(**{**record, "stages": tuple(record.get("stages", STAGES))})


@dataclass
class StagedResult:
    start: AttemptRecord | None = None
    best: AttemptRecord | None = None
    stages: list[StageResult] = field(default_factory=list)
    plans: list[tuple[str, ...]] = field(default_factory=list)
    attempts: list[AttemptRecord] = field(default_factory=list)
    stop_reason: str = ""
    stop: StopKind = StopKind.FINISHED


@dataclass(frozen=True)
class StagedAgents:
    analyzer: AnalyzerAgent
    planner: PlannerAgent
    writer: StageWriter

# The builtin engine's search, each variant judged by the given judge at the given place; its best is the tuned
# candidate. Raises LoweringError when the engine cannot lower the problem.
StageEngine = Callable[[AttemptJudge, Lineage], LoopResult]


class StagedPipeline:
    def __init__(self, *, agents: StagedAgents, knowledge: KnowledgeAccess, evaluate: Evaluator, profile: Profiler,
                 store: Store, run_id: int, settings: StagedSettings, functional_pass: Callable[[], LoopResult],
                 on_event: EventSink | None = None, engine: StageEngine | None = None) -> None:
        self.agents = agents
        self.engine = engine
        self.knowledge = knowledge
        self.profile = profile
        self.store = store
        self.run_id = run_id
        self.settings = settings
        self.functional_pass = functional_pass
        self.say = Reporter(on_event)
        self.result = StagedResult()
        self.judge = AttemptJudge(store, run_id, agents.writer.target, evaluate, self.say, self.result.attempts.append)
        self.cover = Cover(writer=agents.writer, check=knowledge.check, judge=self.judge, retries=settings.retries,
                           say=self.say)

    def run(self, starting_source: str | None = None) -> StagedResult:
        try:
            start = self._start(starting_source)
            if start is not None:
                self.result.start = self.result.best = start
                self._stages(start)
        except BudgetExceeded as exc:
            self.result.stop_reason, self.result.stop = f"budget reached: {exc}", StopKind.of_budget(exc)
        except LLMError as exc:  # the model failed for good (retries spent): what was judged stays
            self.result.stop_reason, self.result.stop = f"the model failed: {exc}", StopKind.MODEL_FAILED
        return self.result

    def _start(self, source: str | None) -> AttemptRecord | None:
        if source is not None:
            record = self.judge.judge(source, Lineage("generate", 0, None, "user"))
            if record.outcome == AttemptOutcome.CORRECT:
                return record
            first_line = record.note.splitlines()[0] if record.note else ""
            self.result.stop_reason = f"the starting kernel is not correct ({record.outcome.value}): {first_line}"
            return None
        self.say("no starting kernel: the KForge loop's functional pass writes one")
        loop = self.functional_pass()
        self.result.attempts[:0] = loop.attempts
        if loop.best is None:
            self.result.stop_reason, self.result.stop = loop.stop_reason, loop.stop
        return loop.best

    def _stages(self, current: AttemptRecord) -> None:
        done: list[str] = []
        history: list[str] = []
        analysis = self._analyze(current, done, history)
        plan = self._plan(analysis)
        if not plan.order:
            self.result.stop_reason = "the analyzer found no issue for the stages of this run"
            return
        while plan.order:
            stage = plan.order[0]
            knowledge = self.knowledge.retrieve(stage)
            left_out = f", {len(knowledge.omitted)} left out for the token budget" if knowledge.omitted else ""
            self.say.line("stage", f"stage {stage}: {len(analysis.for_stage(stage))} issue(s), "
                     f"{len(knowledge.entry_ids)} knowledge entries{left_out}")
            outcome = self._run_stage(stage, current, analysis, knowledge)
            self.result.stages.append(outcome)
            self._record(len(done), outcome, analysis, plan, knowledge.entry_ids)
            done.append(stage)
            history.append(f"{stage}: {outcome.reason}")
            plan = plan.without_first()
            if outcome.accepted is None:
                continue
            current = self.result.best = outcome.accepted
            if self.settings.replan and any(s not in done for s in self.settings.stages):
                analysis = self._analyze(current, done, history)
                plan = self._plan(analysis)
        accepted = sum(1 for s in self.result.stages if s.accepted is not None)
        self.result.stop_reason = f"ran {len(done)} stage(s), {accepted} accepted"

    def _run_stage(self, stage: str, stage_input: AttemptRecord, analysis: Analysis,
                   knowledge: Retrieval) -> StageResult:
        """The builtin engine's try first on the stage it serves; the model's tries unless the engine's is accepted."""
        tried: tuple[AttemptRecord, ...] = ()
        if stage == ENGINE_STAGE and self.engine is not None:
            engine = self._engine_try(stage_input)
            if isinstance(engine, StageResult):
                return engine
            tried = engine
        outcome = self.cover.run(stage, stage_input, analysis.for_stage(stage), knowledge)
        return replace(outcome, attempts=tried + outcome.attempts)

    def _engine_try(self, stage_input: AttemptRecord) -> StageResult | tuple[AttemptRecord, ...]:
        """The accepted stage when the engine's tuned candidate is faster than the input; else its attempts."""
        assert self.engine is not None and stage_input.verdict is not None
        try:
            tuned = self.engine(self.judge, Lineage("optimize", 0, stage_input.attempt_id, ENGINE, ENGINE_STAGE))
        except LoweringError as exc:
            self.say.line("stage", f"stage {ENGINE_STAGE}: {str(exc).split(';')[0]}; the model's tries only")
            return ()
        best = tuned.best
        if best is not None and best.verdict is not None and is_faster(best.verdict, stage_input.verdict):
            reason = (f"accepted the builtin engine's tuned candidate: {stage_input.runtime_ms:.4g} -> "
                      f"{best.runtime_ms:.4g} ms")
            self.say.line("stage", f"stage {ENGINE_STAGE}: {reason}")
            return StageResult(ENGINE_STAGE, stage_input, tuple(tuned.attempts), best, reason)
        found = "no correct variant" if best is None else f"attempt {best.number} is not faster"
        self.say.line("stage", f"stage {ENGINE_STAGE}: builtin engine: {found}; the model tries")
        return tuple(tuned.attempts)

    def _analyze(self, kernel: AttemptRecord, done: list[str], history: list[str]) -> Analysis:
        assert kernel.verdict is not None
        open_stages = [s for s in self.settings.stages if s not in done]
        self.say.line("analysis", f"analysis: reading attempt {kernel.number} and its profile")
        view = KernelView(kernel.source, kernel.runtime_ms, kernel.verdict.eager_ms,
                          analysis_view(self.store, self.profile, kernel))
        analysis = self.agents.analyzer.analyze(view, open_stages, history)
        for note in analysis.notes:
            self.say.line("analysis", f"analysis: {note}")
        self.say.line("analysis", f"analysis: issues for {', '.join(analysis.stages) or 'no stage'}")
        return analysis

    def _plan(self, analysis: Analysis) -> Plan:
        plan = self.agents.planner.plan(analysis)
        for note in plan.notes:
            self.say.line("plan", f"plan: {note}")
        self.say.line("plan", f"plan: {' > '.join(plan.order) or '(nothing to do)'}")
        self.result.plans.append(plan.order)
        return plan

    def _record(self, position: int, outcome: StageResult, analysis: Analysis, plan: Plan,
                knowledge_ids: list[str]) -> None:
        detail = {"issues": [asdict(issue) for issue in analysis.for_stage(outcome.stage)],
                  "plan": list(plan.order), "reason": outcome.reason, "tries": len(outcome.attempts),
                  "knowledge": knowledge_ids}
        self.store.record_stage(self.run_id, position=position, stage=outcome.stage,
                                input_attempt_id=outcome.input.attempt_id,
                                output_attempt_id=outcome.accepted.attempt_id if outcome.accepted else None,
                                status="accepted" if outcome.accepted else "skipped", detail=detail)
