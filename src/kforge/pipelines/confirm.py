"""A run's last word on its best: judged once more, with the reference timed beside it.

During a run every candidate is compared with baselines measured once (pipelines/baselines.py): cheap, and fair
between candidates, but a single measurement, so a machine that was busy at that moment skews every speedup of
the run alike. When a run ends, its best is therefore evaluated again in full (correctness trials included),
with eager PyTorch and torch.compile timed in rounds taken in turn with it (docs/harness.md, Timing), and the
run reports those figures. A best that fails this second judgement is reported as such: a candidate that is
right only some of the time is caught here rather than shipped.
"""

from __future__ import annotations

from kforge.pipelines.events import EventSink, Reporter
from kforge.pipelines.judging import AttemptRecord
from kforge.problem import Problem, Solution
from kforge.store import Store
from kforge.verify.evaluate import EvalOptions, evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Verdict


def confirm_best(store: Store, run_id: int, problem: Problem, best: AttemptRecord, options: EvalOptions,
                 pool: WorkerPool | None, on_event: EventSink | None = None) -> Verdict | None:
    """Judge the run's best again with its baselines beside it and keep the verdict on the run; None (nothing
    recorded) when the run asks for no timing or no baselines, or its best was never timed."""
    if not options.measure or not options.baselines or best.verdict is None or best.verdict.timing is None:
        return None
    say = Reporter(on_event)
    say(f"confirming the best (attempt {best.number}): judged again, the reference timed in turn beside it")
    verdict = evaluate(problem, Solution.from_source(best.source, options.language), options, pool=pool)
    store.record_confirmation(run_id, best.attempt_id, verdict.model_dump(mode="json"))
    if not verdict.correct:
        say.line("attempt", f"the best did not pass a second time: {verdict.verdict}: {verdict.reason}")
    return verdict
