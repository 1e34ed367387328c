"""The KForge loop: a functional pass until a candidate is correct, then optimization rounds.

Functional pass: the generation agent writes a candidate; the harness judges it; failures go back to the
agent as feedback (compiler errors, the exception, the mismatch, the policy rule) until a candidate is
correct or the attempt budget is spent. Optimization pass: the analyst reads the best candidate's profile
and recommends one change; the generation agent applies it; the result replaces the best only when it is
correct and faster beyond measurement noise (`kforge.verify.compare.is_faster`). The loop stops after the
rounds, when rounds stop improving (`patience`), or when a budget is reached.

Every attempt is recorded in the store as soon as it exists and its evaluation as soon as it is known. A
resumed run replays the same decisions: its LLM requests are answered from the store and an attempt the
store already judged is not evaluated again.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from kforge.agents.analyst import AnalystAgent
from kforge.agents.feedback import AttemptOutcome
from kforge.agents.generator import GenerationAgent, GenerationRequest, Phase, Proposal
from kforge.llm.budget import BudgetExceeded
from kforge.llm.errors import LLMError
from kforge.pipelines.events import EventSink, Reporter, gist
from kforge.pipelines.judging import AttemptJudge, AttemptRecord, Evaluator, Lineage, Profiler, analysis_view
from kforge.pipelines.stop import StopKind
from kforge.store import Store
from kforge.verify.compare import is_faster  # also imported from here by callers of the loop

_STREAM_REPORT_CHARS = 400


@dataclass(frozen=True)
class LoopSettings:
    attempts: int = 5  # generation attempts allowed for the functional pass
    rounds: int = 3  # optimization rounds
    candidates: int = 1  # candidates requested concurrently per step
    patience: int = 2  # optimization rounds without improvement before stopping
    repairs: int = 1  # repair attempts for a failed optimization candidate


@dataclass
class LoopResult:
    attempts: list[AttemptRecord] = field(default_factory=list)
    best: AttemptRecord | None = None
    stop_reason: str = ""
    recommendations: list[str] = field(default_factory=list)
    stop: StopKind = StopKind.FINISHED




class KForgeLoop:
    def __init__(self, *, generator: GenerationAgent, analyst: AnalystAgent, evaluate: Evaluator,
                 profile: Profiler, store: Store, run_id: int, settings: LoopSettings,
                 on_event: EventSink | None = None) -> None:
        self.generator = generator
        self.analyst = analyst
        self.evaluate = evaluate
        self.profile = profile
        self.store = store
        self.run_id = run_id
        self.settings = settings
        self.say = Reporter(on_event)
        self.result = LoopResult()
        self.judge = AttemptJudge(store, run_id, generator.target, evaluate, self.say, self.result.attempts.append)

    def run(self, starting_source: str | None = None) -> LoopResult:
        try:
            if starting_source is not None:
                # Whoever found the starting kernel (the engine, an earlier run) said its line: not said again.
                self.result.best = self.judge.judge(starting_source, Lineage("generate", 0, None, "user"),
                                                    repeat=False)
                if self.result.best.outcome != AttemptOutcome.CORRECT:
                    self.result.best = None
            if self.result.best is None:
                self._functional_pass()
            if self.result.best is None:
                self.result.stop_reason = f"no correct candidate within {self.settings.attempts} attempts"
                return self.result
            self._optimization_pass()
        except BudgetExceeded as exc:
            self.result.stop_reason, self.result.stop = f"budget reached: {exc}", StopKind.of_budget(exc)
        except LLMError as exc:  # the model failed for good (retries spent): what was judged stays
            self.result.stop_reason, self.result.stop = f"the model failed: {exc}", StopKind.MODEL_FAILED
        return self.result

    # ---- passes ------------------------------------------------------------------------------------------
    def _functional_pass(self) -> None:
        request = GenerationRequest(phase="generate")
        made = 0
        while made < self.settings.attempts and self.result.best is None:
            count = min(self.settings.candidates, self.settings.attempts - made)
            self.say(f"functional pass: asking for {count} candidate(s)")
            records = self._ask_and_judge([request] * count, round_=0, parent=None)
            made += len(records)
            correct = [r for r in records if r.outcome == AttemptOutcome.CORRECT]
            if correct:
                self.result.best = min(correct, key=lambda r: r.runtime_ms or float("inf"))
                return
            last = records[-1]
            request = GenerationRequest(phase="repair", previous_source=last.source or None, feedback=last.note)

    def _optimization_pass(self) -> None:
        stale = 0
        for round_ in range(1, self.settings.rounds + 1):
            best = self.result.best
            assert best is not None and best.verdict is not None
            self.say.line("round", f"round {round_}: profiling the best candidate (attempt {best.number})")
            view = analysis_view(self.store, self.profile, best)
            recommendation = self.analyst.recommend(best.source, best.verdict.runtime_ms or 0.0,
                                                    best.verdict.eager_ms, view, self.result.recommendations)
            self.result.recommendations.append(recommendation.text)
            self.say.line("round", f"round {round_}: analyst recommends: {gist(recommendation.text)}")
            request = GenerationRequest(phase="optimize", previous_source=best.source,
                                        recommendation=recommendation.text,
                                        best_runtime_ms=best.verdict.runtime_ms, eager_ms=best.verdict.eager_ms)
            improved = self._optimization_round(request, round_, best)
            stale = 0 if improved else stale + 1
            if stale >= self.settings.patience:
                self.result.stop_reason = f"no improvement in {stale} consecutive rounds"
                return
        self.result.stop_reason = f"finished {self.settings.rounds} optimization rounds"

    def _optimization_round(self, request: GenerationRequest, round_: int, best: AttemptRecord) -> bool:
        records = self._ask_and_judge([request] * self.settings.candidates, round_, parent=best.attempt_id)
        for _ in range(self.settings.repairs):
            failed = [r for r in records if r.outcome != AttemptOutcome.CORRECT]
            if not failed or any(r.outcome == AttemptOutcome.CORRECT for r in records):
                break
            last = failed[-1]
            repair = GenerationRequest(phase="repair", previous_source=last.source or None, feedback=last.note)
            records = self._ask_and_judge([repair], round_, parent=last.attempt_id)
        improved = False
        for record in records:
            current = self.result.best
            assert current is not None and current.verdict is not None
            if record.verdict is not None and is_faster(record.verdict, current.verdict):
                self.say.line("round", f"round {round_}: attempt {record.number} is the new best "
                         f"({current.verdict.runtime_ms:.4g} -> {record.verdict.runtime_ms:.4g} ms)")
                self.result.best = record
                improved = True
        return improved

    # ---- one step: concurrent generation, evaluations queued as proposals arrive ------------------------------
    def _ask_and_judge(self, requests: list[GenerationRequest], round_: int, parent: int | None) -> list[AttemptRecord]:
        records: list[AttemptRecord] = []
        streamed = _StreamCounter(self.say, len(requests))
        with ThreadPoolExecutor(max_workers=max(1, len(requests))) as pool:
            futures = [pool.submit(self.generator.propose, request, streamed.add) for request in requests]
            for future in as_completed(futures):
                proposal: Proposal = future.result()
                phase = requests[0].phase
                records.append(self._record_proposal(proposal, phase, round_, parent))
        return records

    def _record_proposal(self, proposal: Proposal, phase: Phase, round_: int, parent: int | None) -> AttemptRecord:
        return self.judge.proposal(proposal, Lineage(phase, round_, parent, "generator"))


class _StreamCounter:
    """Turns streamed reply text into progress events ('model writing: 1200 characters')."""

    def __init__(self, say: Reporter, replies: int) -> None:
        self.say = say
        self.replies = replies
        self.characters = 0
        self.reported = 0
        self.lock = threading.Lock()

    def add(self, delta: str) -> None:
        with self.lock:
            self.characters += len(delta)
            if self.characters - self.reported < _STREAM_REPORT_CHARS:
                return
            self.reported = self.characters
            count = self.characters
        plural = f" ({self.replies} replies)" if self.replies > 1 else ""
        self.say.line("stream", f"model writing{plural}: {count} characters")
