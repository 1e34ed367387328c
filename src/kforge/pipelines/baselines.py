"""The reference's timings for a whole run: one measurement that every candidate of the run is compared with.

Timing eager PyTorch and torch.compile again for each candidate would cost each evaluation a compile and
several seconds, and would compare candidates with figures that move between worker processes (on a busy or
small machine, eager read 0.63 ms for one attempt and 1.30 ms for the next): speedups of one run would not be
comparable. So a run measures its baselines once, when the first timed candidate needs them, keeps them in the
store (a resumed run reuses them), and attaches them to every timed verdict.
"""

from __future__ import annotations

import time

from kforge.pipelines.events import EventSink, Reporter
from kforge.store import Store
from kforge.verify.device_lock import device_lock
from kforge.verify.evaluate import EvalOptions, ProblemInput, measure_baselines
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Baselines, Verdict


class RunBaselines:
    def __init__(self, store: Store, run_id: int, problem: ProblemInput, options: EvalOptions, pool: WorkerPool | None,
                 on_event: EventSink | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.problem = problem
        self.options = options
        self.pool = pool
        self.say = Reporter(on_event)
        self._value: Baselines | None = None
        self.spent_s = 0.0  # seconds spent timing the reference: not the search's, so not its budget's
        self._lock = device_lock()
        self._lock_waits_before = self._lock.waited_s  # waits of this process before the run: not the run's
        self._lock_waits_in_baselines = 0.0  # already inside spent_s

    def search_clock(self) -> float:
        """A monotonic clock that stands still while the reference is timed and while this process waits for
        its device (verify/device_lock.py: a neighbour on the same GPU is timing): the engine's tuning budget is
        for judging variants, and the run's baselines are timed during its first timed variant."""
        waited = self._lock.waited_s - self._lock_waits_before - self._lock_waits_in_baselines
        return time.monotonic() - self.spent_s - waited

    @property
    def candidate_options(self) -> EvalOptions:
        """The options to judge each candidate with: everything as asked, minus the per-candidate baselines."""
        return self.options.model_copy(update={"baselines": ()})

    def attach(self, verdict: Verdict) -> Verdict:
        """`verdict` compared with the run's baselines; unchanged when it has no timing or none were asked for."""
        if verdict.timing is None or not self.options.baselines:
            return verdict
        return verdict.with_baselines(self.get())

    def get(self) -> Baselines:
        """The run's baselines: from memory, from the store, or measured now (once)."""
        if self._value is None:
            run = self.store.get_run(self.run_id)
            if run is not None and run.baselines is not None:
                self._value = Baselines.model_validate(run.baselines)
            else:
                self._value = self._measure()
        return self._value

    def _measure(self) -> Baselines:
        names = " and ".join("torch.compile" if name == "compile" else name for name in self.options.baselines)
        self.say(f"timing the reference once for the run ({names}); every candidate is compared with it")
        started, waits_before = time.monotonic(), self._lock.waited_s
        try:
            value = measure_baselines(self.problem, self.options, pool=self.pool)
        except RuntimeError as exc:
            # Not stored: a resumed run tries again. This run goes on without speedups.
            self.say(f"{exc}; speedups are not reported")
            return Baselines(warnings=[str(exc)])
        finally:
            self.spent_s += time.monotonic() - started
            self._lock_waits_in_baselines += self._lock.waited_s - waits_before
        self.store.record_baselines(self.run_id, value.model_dump(mode="json"))
        return value
