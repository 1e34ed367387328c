"""Harness overhead and measurement spread: prints figures, asserts nothing.

    python benchmarks/harness_overhead.py [--problem P --solution S] [--platform cpu|cuda] [--repeats 5] [--steps]

Reports, for one kernel:
  cold      one evaluation with an empty build cache (compiles the candidate);
  cached    evaluations in one process with a worker pool, build cached: wall time beyond the timing
            loops (target: at most 1 s); and what the timing loops spend beyond their timed calls (drawing
            fresh inputs from get_inputs and flushing the caches before every call), per call;
  spread    the median runtime over `--repeats` evaluations: (max - min) / mean of the medians
            (target: at most 3% on a CPU, 1% on an H200); with --eager, also the spread of the speedup
            over the eager reference timed in the same evaluations.
  floor     the machine's own steadiness: before each evaluation, the problem's PyTorch reference is timed
            in a bare loop in this process (no worker, no fresh inputs, no cache flush), and the spread of
            those medians is printed beside the harness's. A harness cannot be steadier than its machine:
            where the floor is above the target, the target cannot be judged there.
  steps     with --steps, where a cached evaluation's wall time goes: the time from each progress message
            of the harness to the next, summed by step over the cached evaluations (median per evaluation).

The default solution is the bundled example's for the platform's first language (C++ on a CPU, CUDA on a GPU).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from kforge.platforms import Platform, get_platform
from kforge.problem import Problem, load_problem
from kforge.verify.evaluate import EvalOptions, TimingSettings, evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "examples" / "gated_channel_scale"


class StepClock:
    """Progress messages with their times: how long each step of an evaluation took, until the next message.
    Round and trial numbers are dropped from the names, so that repeated steps add up under one name."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, str]] = []

    def __call__(self, message: str) -> None:
        self.marks.append((time.perf_counter(), re.sub(r"(round|trial) \d+( of |/)\d+", r"\1 N", message)))

    def steps(self, ended: float) -> dict[str, float]:
        totals: dict[str, float] = {}
        for (start, name), (stop, _) in zip(self.marks, [*self.marks[1:], (ended, "")], strict=True):
            totals[name] = totals.get(name, 0.0) + stop - start
        return totals


def timed_evaluation(problem: Path, solution: Path, options: EvalOptions, pool: WorkerPool | None = None,
                     clock: StepClock | None = None) -> tuple[Verdict, float]:
    started = time.perf_counter()
    verdict = evaluate(problem, solution, options, progress=clock, pool=pool)
    wall = time.perf_counter() - started
    if not verdict.correct:
        sys.exit(f"the benchmark kernel is not correct: {verdict.verdict}: {verdict.reason}")
    return verdict, wall


def bare_median_ms(problem: Problem, platform: Platform, calls: int = 100) -> float:
    """The reference's median over `calls` back-to-back calls on one input: the machine's noise alone."""
    torch.manual_seed(0)
    model = problem.model_class(*problem.init_inputs()).to(platform.device)
    inputs = problem.inputs(1, device=platform.device)
    times = []
    with torch.no_grad():
        for _ in range(3 + calls):
            platform.synchronize()
            times.append(platform.time_call(lambda: model(*inputs))[1])
    return statistics.median(times[3:]) / 1e6


def loop_cost_per_call_ms(verdict: Verdict) -> float:
    """The timing loops' wall time beyond the timed calls themselves, per timed call."""
    series = [stats for stats in (verdict.timing, verdict.eager_timing, verdict.compile_timing) if stats]
    calls = sum(stats.repeats for stats in series)
    timed_s = sum(stats.mean_ms * stats.repeats for stats in series) / 1e3
    return 1e3 * ((verdict.timing_s or 0.0) - timed_s) / max(calls, 1)


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.fmean(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, default=DEFAULT / "problem.py")
    parser.add_argument("--solution", type=Path, default=None,
                        help="default: the bundled example's solution in the platform's first language")
    parser.add_argument("--platform", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause", type=float, default=8.0,
                        help="seconds between cached evaluations (the pool's spare finishes starting)")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the cold evaluation and use the usual build cache (spread only)")
    parser.add_argument("--eager", action="store_true",
                        help="time the eager reference in each cached evaluation too: adds the spread of the speedup")
    parser.add_argument("--rounds", type=int, default=TimingSettings().rounds,
                        help="rounds the timed calls are split into, taken in turn with the eager reference's")
    parser.add_argument("--steps", action="store_true", help="print where each cached evaluation's time goes")
    args = parser.parse_args()
    if args.solution is None:
        args.solution = args.problem.parent / f"solution_{get_platform(args.platform).languages[0]}.py"
    console = Console()
    rows: list[tuple[str, str, str]] = []

    with tempfile.TemporaryDirectory(prefix="kforge-bench-cache-") as fresh_cache:
        cache = None if args.no_cold else Path(fresh_cache)
        options = EvalOptions(platform=args.platform, baselines=(), cache_dir=cache,
                              timing=TimingSettings(rounds=args.rounds))
        if not args.no_cold:
            cold, cold_wall = timed_evaluation(args.problem, args.solution, options)
            rows.append(("cold evaluation (wall)", f"{cold_wall:.2f} s",
                         f"build {cold.build_s:.2f} s, timing loops {cold.timing_s:.2f} s"))

        overheads, loop_costs, medians, speedups, floors = [], [], [], [], []
        step_totals: dict[str, list[float]] = {}
        problem, platform = load_problem(args.problem), get_platform(args.platform)
        if args.eager:
            options = options.model_copy(update={"baselines": ("eager",)})
        with WorkerPool(spares=1) as pool:  # one spare of each kind: the candidate's, and with --eager the reference's
            timed_evaluation(args.problem, args.solution, options, pool)  # fills the pool
            for _ in range(args.repeats):
                time.sleep(args.pause)  # the pool's spare finishes starting, as it does while an agent thinks
                floors.append(bare_median_ms(problem, platform))  # here, while no spare is starting
                clock = StepClock()
                verdict, wall = timed_evaluation(args.problem, args.solution, options, pool, clock)
                for name, seconds in clock.steps(ended=clock.marks[0][0] + wall).items():
                    step_totals.setdefault(name, []).append(seconds)
                overheads.append(wall - (verdict.timing_s or 0.0))
                assert verdict.timing is not None
                loop_costs.append(loop_cost_per_call_ms(verdict))
                medians.append(verdict.timing.median_ms)
                against = ""
                if verdict.speedup_vs_eager is not None:
                    speedups.append(verdict.speedup_vs_eager)
                    against = f", eager {verdict.eager_ms:.4f} ms, speedup {verdict.speedup_vs_eager:.4f}x"
                console.print(f"  run: median {verdict.timing.median_ms:.4f} ms (IQR {verdict.timing.iqr_ms:.4f}), "
                              f"wall {wall:.2f} s, build {verdict.build_s:.3f} s, timed {verdict.timing_s:.2f} s"
                              f"{against}; reference in a bare loop {floors[-1]:.4f} ms")

    rows.append(("cached evaluation: wall beyond timing loops", f"{statistics.median(overheads):.2f} s",
                 f"median of {len(overheads)}; max {max(overheads):.2f} s; target <= 1 s"))
    rows.append(("timing loops beyond their timed calls", f"{statistics.median(loop_costs):.2f} ms a call",
                 "drawing fresh inputs and flushing the caches before each call; median of the evaluations"))
    rows.append(("median runtime over repeated evaluations", f"{statistics.fmean(medians):.4f} ms",
                 f"{len(medians)} evaluations: " + ", ".join(f"{m:.4f}" for m in medians)))
    rows.append(("spread of the median", f"{100 * spread(medians):.2f} %", "(max - min) / mean; target <= 3% (CPU)"))
    if speedups:
        rows.append(("spread of the speedup vs eager", f"{100 * spread(speedups):.2f} %",
                     f"{statistics.fmean(speedups):.3f}x on average; (max - min) / mean"))
    rows.append(("floor: the reference in a bare loop", f"{100 * spread(floors):.2f} %",
                 "spread of its medians, one before each evaluation: the machine's own steadiness"))

    if args.steps:
        steps = Table(title="where a cached evaluation's wall time goes (median over the evaluations)")
        steps.add_column("step (until the next progress message)")
        steps.add_column("seconds", justify="right")
        for name, seconds in sorted(step_totals.items(), key=lambda item: -statistics.median(item[1])):
            steps.add_row(name, f"{statistics.median(seconds):.2f}")
        console.print(steps)
    table = Table(title=f"kforge harness on {args.platform}: {args.solution}")
    for column in ("figure", "value", "detail"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    main()
