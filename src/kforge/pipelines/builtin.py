"""The builtin engine's run: propose variants, find the fastest correct one, and have the harness judge it.

Where the platform times the language (and the caller gives a `search`), every variant is tried in one sandboxed
worker first (verify/search.py: milliseconds of calls each, outputs compared with the reference's): those wrong
there are dropped, and only the quickest, and a second one whose time is close to it, go to the full harness.
Elsewhere (Triton in the CPU interpreter, which is not timed), or without a search, `kforge.engine.tune` judges
the variants through the harness, a new best kept only when it is faster beyond noise.

Every variant judged is recorded in the store as an attempt (`made_by="builtin"`) before it is judged, and its
verdict as soon as it is known; what a search found is kept there too. A resumed run finds all three, reads the
search's ranking back rather than searching again (under other load another variant could come first), and judges
nothing twice.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from kforge.agents.targets import Target
from kforge.engine.cost import CostModel
from kforge.engine.propose import EngineCandidates, EngineProposer, EngineRequest
from kforge.engine.tune import TuneSettings, Variant, tune
from kforge.pipelines.events import EventSink, Reporter
from kforge.pipelines.judging import AttemptJudge, AttemptRecord, Lineage
from kforge.pipelines.loop import LoopResult
from kforge.problem import Problem
from kforge.proposer import Proposer
from kforge.store import Store, text_hash
from kforge.verify.compare import is_faster
from kforge.verify.machine_load import LoadWatch
from kforge.verify.search import Tried, ranked
from kforge.verify.verdict import Evaluator, Verdict

MADE_BY = "builtin"
ON_ITS_OWN = Lineage("generate", 0, None, MADE_BY)  # where its attempts sit when it runs outside a stage
Prebuild = Callable[[list[str]], None]  # compiles sources ahead of their evaluation, side by side
# Tries sources in one worker (verify/search.py), given each one's roofline floor in ms (None: unknown) and a wall
# budget in seconds (None: none).
Search = Callable[[list[str], list[float | None], float | None], list[Tried]]
# After a search: the quickest variant is judged, and the next ones too while their search time is within this
# factor of the quickest's (the search's short timing cannot tell them apart; the harness's can), up to
# JUDGED_CLOSE in all. A variant right in the search but not in the harness makes way for the next one, up to
# JUDGED_AT_MOST judgments.
CLOSE_FACTOR = 1.15
JUDGED_CLOSE = 2
JUDGED_AT_MOST = 4

# Variants judged in a run unless the caller asks for a number, by (platform, language). A C++ variant costs
# a build of about a minute on a CPU; a Triton variant on a GPU compiles and runs in seconds, so more of its
# space is searched (the tuner's wall budget still bounds the run). Elsewhere three: Triton in the CPU
# interpreter is not timed, so its variants cannot be ranked and only a fallback for an incorrect one helps.
DEFAULT_VARIANTS: dict[tuple[str, str], int] = {("cpu", "cpp"): 3, ("cuda", "triton"): 12}
OTHER_VARIANTS = 3
# Where a search ranks the variants (verify/search.py), a Triton variant costs its compile and a fraction of a
# second of calls, not a judgment: the whole space the backend offers is searched.
SEARCHED_VARIANTS: dict[tuple[str, str], int] = {("cuda", "triton"): 64}
# Languages whose candidates are compiled before they run (Triton compiles at its first call).
COMPILED_LANGUAGES = ("cpp", "cuda")


def default_variants(platform: str, language: str, searched: bool = False) -> int:
    """How many variants the engine considers for (platform, language) when not told: judges, or with `searched`
    tries in the search."""
    if searched and (platform, language) in SEARCHED_VARIANTS:
        return SEARCHED_VARIANTS[(platform, language)]
    return DEFAULT_VARIANTS.get((platform, language), OTHER_VARIANTS)


class BuiltinRun:
    """Judges the engine's variants for one run of the store: on their own (`--model builtin`, or the LLM loop's
    start), or through a pipeline's judge where the variants are tries of a stage (`lineage`)."""

    def __init__(self, store: Store, run_id: int, platform: str, language: str, evaluate: Evaluator,
                 on_event: EventSink | None = None, *, judge: AttemptJudge | None = None,
                 lineage: Lineage = ON_ITS_OWN, prebuild: Prebuild | None = None, search: Search | None = None,
                 cost: Callable[[], CostModel] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.run_id = run_id
        self.platform = platform
        self.language = language
        self.evaluate = evaluate
        self.say = Reporter(on_event)
        self.lineage = lineage
        self.prebuild = prebuild
        self.search = search
        self.cost = cost  # measured when first needed: the workload's floor and the device's peaks
        self.clock = clock  # what the tuning budget is counted on (pipelines/baselines.py: RunBaselines.search_clock)
        self.records: dict[str, AttemptRecord] = {}
        self.proposer: Proposer[EngineRequest, EngineCandidates] = EngineProposer()
        self.attempts = judge or AttemptJudge(store, run_id, Target(platform, language), evaluate, self.say,
                                              on_record=lambda _record: None)

    def run(self, problem: Problem, vendor_gemm: bool = False, variants: int | None = None,
            settings: TuneSettings | None = None) -> LoopResult:
        """Propose and judge up to `variants` (default: `default_variants`); LoweringError (before anything is
        recorded) when the problem cannot be lowered."""
        limit = variants if variants is not None else default_variants(self.platform, self.language,
                                                                       searched=self.search is not None)
        proposal = self.proposer.propose(EngineRequest(problem, self.language, vendor_gemm, limit))
        for note in proposal.program.notes:
            self.say(f"builtin: {note}")
        self.say(f"builtin: {len(proposal.variants)} variant(s) to {'search' if self.search else 'judge'}")
        settings = settings or TuneSettings()
        if self.search is not None and len(proposal.variants) > 1:
            return self.search_then_judge(list(proposal.variants), settings)
        self.compile_ahead([variant.source for variant in proposal.variants[:settings.exhaustive_up_to]])
        tuned = tune(proposal.variants, self.judge, settings, progress=self.say, clock=self.clock)
        result = LoopResult(attempts=list(self.records.values()))
        if tuned.best is not None:
            result.best = self.records[text_hash(tuned.best.variant.source)]
        result.stop_reason = f"builtin engine: {tuned.stop_reason}" if tuned.stop_reason else \
            f"builtin engine: judged {len(tuned.trials)} variant(s)"
        if result.best is None:
            result.stop_reason += "; no variant was correct"
        return result

    def search_then_judge(self, variants: list[Variant], settings: TuneSettings) -> LoopResult:
        """Try every variant in the search's worker, then judge the quickest (and those close to it)."""
        assert self.search is not None
        started = self.clock()
        unique = list({variant.source: variant for variant in reversed(variants)}.values())[::-1]
        cost = self.cost() if self.cost is not None else CostModel(None, tensor_cores=False)
        ordered = [unique[index] for index in cost.order([variant.config for variant in unique])]
        sources = [variant.source for variant in ordered]
        labels = {variant.source: variant.label() for variant in ordered}
        key = text_hash("\n".join([repr(self.lineage), *map(text_hash, sources)]))
        kept = self.store.find_search(self.run_id, key)
        if kept is not None:
            self.say(f"builtin: the search of these {len(sources)} variants is read back from the store")
            tried = [Tried(**one) for one in kept]
        else:
            self.compile_ahead(sources)
            self.say(f"builtin: searching {len(sources)} variants in one worker")
            watch = LoadWatch().start()
            tried = self.search(sources, [cost.floor_ms(variant.config) for variant in ordered], settings.budget_s)
            reading = watch.reading()
            if reading is not None and reading.busy:
                # A share of the roofline measured under others' load says nothing of the kernel.
                self.say(f"builtin: {reading.line()}")
                tried = [dataclasses.replace(one, floor_share=None) for one in tried]
            self.store.record_search(self.run_id, key, [dataclasses.asdict(one) for one in tried])
        for one in tried:
            label = labels[sources[one.index]]
            share = f", {one.floor_share:.0%} of its roofline floor" if one.floor_share is not None else ""
            self.say(f"builtin: search: {label}: " + (f"{one.median_ms:.4f} ms{share}" if one.usable else
                                                      f"dropped ({one.dropped})"))
        order = ranked(tried)
        searched = sum(1 for one in tried if one.dropped is None or not one.dropped.startswith("not tried"))
        summary = (f"builtin engine: searched {searched} of {len(sources)} variant(s) in "
                   f"{self.clock() - started:.0f} s (builds included), {len(order)} right")
        if order and order[0].floor_share is not None:
            summary += f", the quickest at {order[0].floor_share:.0%} of its roofline floor"
        best: AttemptRecord | None = None
        judged = 0
        for one in order:
            if judged >= JUDGED_AT_MOST or (best is not None and (
                    judged >= JUDGED_CLOSE or (one.median_ms or 0.0) > CLOSE_FACTOR * (order[0].median_ms or 0.0))):
                break
            source = sources[one.index]
            verdict = self.judge(source)
            judged += 1
            record = self.records[text_hash(source)]
            if not verdict.correct:
                self.say(f"builtin: {labels[source]}: right in the search, but the harness judged it "
                         f"{verdict.verdict}: {verdict.reason.splitlines()[0][:200]}")
            elif best is None or (best.verdict is not None and is_faster(verdict, best.verdict)):
                best = record
        result = LoopResult(attempts=list(self.records.values()), best=best)
        result.stop_reason = f"{summary}; judged {judged}"
        if best is None:
            result.stop_reason += "; no variant was correct"
        return result

    def compile_ahead(self, sources: list[str]) -> None:
        """Compile the variants the tuner will judge first side by side, before any is timed (so no build
        competes with a timed call): on a machine with N cores, N builds take the time of one. Only where
        variants are compiled ahead of time (C++), only those not judged yet (a resumed run's are)."""
        if self.prebuild is None or self.language not in COMPILED_LANGUAGES:
            return
        fresh = [source for source in sources if self.store.find_attempt(self.run_id, text_hash(source)) is None]
        if len(fresh) > 1:
            self.say(f"builtin: compiling {len(fresh)} variants side by side")
            self.prebuild(fresh)

    def judge(self, source: str) -> Verdict:
        """The harness's verdict on one variant, recorded (or read back on resume) in the store."""
        record = self.attempts.judge(source, self.lineage)
        self.records[text_hash(source)] = record
        assert record.verdict is not None
        return record.verdict


def stage_engine(problem: Problem, vendor_gemm: bool, on_event: EventSink | None = None, *,
                 search: Search | None = None, cost: Callable[[], CostModel] | None = None,
                 ) -> Callable[[AttemptJudge, Lineage], LoopResult]:
    """The engine as the staged pipeline's autotuning try: its variants judged by the pipeline's judge, where the
    pipeline places them (`lineage`), after the `search` ranked them where one is given (as `BuiltinRun`);
    LoweringError when it cannot lower the problem."""
    def run(judge: AttemptJudge, lineage: Lineage) -> LoopResult:
        engine = BuiltinRun(judge.store, judge.run_id, judge.target.platform, judge.target.language, judge.evaluate,
                            on_event, judge=judge, lineage=lineage, search=search, cost=cost)
        return engine.run(problem, vendor_gemm=vendor_gemm)

    return run
