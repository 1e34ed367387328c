"""The CUDA platform's figures on a GPU: prints a table, writes JSON, asserts nothing.

    python benchmarks/gpu_bench.py [--out DIR] [--deadline-s 300] [--repeats 5]

Sections, in order; once the deadline has passed the rest are marked skipped and the table still prints:
  clock     the host-clock cross-check on honest work: per-call surplus of host time over the device
            events, beside what the side-stream rule allows (margin: allowed / worst honest surplus);
  overhead  wall time of one evaluation beyond its timed calls, build cached (median of 3; no baselines);
  spread    the median runtime over --repeats evaluations of one kernel: (max - min) / mean (target <= 1%);
  examples  each example's CUDA C++ and Triton solutions: verdict, runtime, speedup vs eager and
            torch.compile (the compile baseline is timed once per problem, with the CUDA C++ solution).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kforge.platforms.cuda import CudaPlatform
from kforge.platforms.cuda.device import HIDDEN_WORK_FLOOR_NS, HIDDEN_WORK_FRACTION
from kforge.verify.evaluate import EvalOptions, TimingSettings, evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SPREAD_EXAMPLE = EXAMPLES / "linear_gelu_tanh"
EXAMPLE_TIMING = TimingSettings(warmup_ms=50, rep_ms=300)

Row = tuple[str, str, str]


class Bench:
    def __init__(self, out: Path | None, deadline_s: float) -> None:
        self.out = out
        self.deadline = time.monotonic() + deadline_s
        self.rows: list[Row] = []
        self.record: dict[str, Any] = {}
        self.pool = WorkerPool(spares=1)

    def left_s(self) -> float:
        return self.deadline - time.monotonic()

    def section(self, name: str, run: Callable[[], None], needs_s: float) -> None:
        if self.left_s() < needs_s:
            self.rows.append((name, "skipped", f"needs about {needs_s:.0f} s, {max(self.left_s(), 0):.0f} s left"))
            return
        started = time.monotonic()
        try:
            run()
        except Exception as exc:  # a benchmark reports what broke and goes on
            self.rows.append((name, "FAILED", f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"))
        self.record.setdefault("section_s", {})[name] = round(time.monotonic() - started, 1)

    def evaluate(self, problem: Path, solution: Path, options: EvalOptions) -> tuple[Verdict, float]:
        started = time.perf_counter()
        verdict = evaluate(problem, solution, options, pool=self.pool)
        wall = time.perf_counter() - started
        self.log({"problem": str(problem.relative_to(ROOT)), "solution": str(solution.relative_to(ROOT)),
                  "wall_s": wall, **verdict.to_json_dict()})
        return verdict, wall

    def log(self, entry: dict[str, Any]) -> None:
        if self.out is not None:
            with open(self.out / "gpu_bench_verdicts.jsonl", "a") as handle:
                handle.write(json.dumps(entry) + "\n")

    # ---- sections --------------------------------------------------------------------------------------
    def clock(self) -> None:
        """Surplus of host time over events for honest work of several shapes, and for hidden work."""
        platform = CudaPlatform()
        big = torch.randn(32 << 20, device="cuda")
        small = torch.randn(1 << 16, device="cuda")
        side = torch.cuda.Stream()

        def joined() -> None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                big.mul_(1.0001)
            torch.cuda.current_stream().wait_stream(side)

        def many_small() -> None:
            for _ in range(20):
                small.mul_(1.0001)

        def hidden() -> None:
            with torch.cuda.stream(side):
                big.mul_(1.0001)

        honest = {"128 MB elementwise": lambda: big.mul_(1.0001), "256 KB elementwise": lambda: small.mul_(1.0001),
                  "20 small launches": many_small, "joined side stream": joined}
        worst = 0.0
        figures: dict[str, Any] = {}
        for name, call in {**honest, "hidden side stream (must flag)": hidden}.items():
            for _ in range(5):
                platform.time_call(call)
            for _ in range(100):
                platform.flush_cache()
                platform.synchronize()
                platform.time_call(call)
            records = platform.clock_records()[-100:]
            overhead = platform.host_overhead_ns()
            device = statistics.median(timed for timed, _, _ in records)
            surplus = statistics.median(host - window for _, window, host in records) - overhead
            allowed = max(HIDDEN_WORK_FLOOR_NS, HIDDEN_WORK_FRACTION * device)
            flagged = platform.audit_timing([timed for timed, _, _ in records]) is not None
            figures[name] = {"device_us": device / 1e3, "surplus_us": surplus / 1e3, "allowed_us": allowed / 1e3,
                             "overhead_us": overhead / 1e3, "flagged": flagged}
            if name in honest:
                worst = max(worst, surplus)
            self.rows.append((f"clock: {name}", f"surplus {surplus / 1e3:.1f} us",
                              f"events {device / 1e3:.1f} us, allowed {allowed / 1e3:.1f} us, "
                              f"{'FLAGGED' if flagged else 'passed'}"))
        margin = HIDDEN_WORK_FLOOR_NS / worst if worst > 0 else float("inf")
        self.rows.append(("clock: floor / worst honest surplus", f"{margin:.1f}x", "want > 2x"))
        self.record["clock"] = figures

    def overhead(self) -> None:
        folder = EXAMPLES / "gated_channel_scale"
        problem, solution = folder / "problem.py", folder / "solution_cuda.py"
        options = EvalOptions(platform="cuda", baselines=())
        self.evaluate(problem, solution, options)  # builds or loads, and fills the pool
        beyond = []
        for _ in range(3):
            time.sleep(2.0)  # let the pool's spare worker finish importing, as between an agent's rounds
            verdict, wall = self.evaluate(problem, solution, options)
            timed = getattr(verdict, "timing_s", None) or 0.0
            beyond.append(wall - timed)
        self.rows.append(("overhead: evaluation beyond timed runs", f"{statistics.median(beyond):.2f} s",
                          f"median of 3 (max {max(beyond):.2f} s), cached build, no baselines"))
        self.record["overhead_s"] = beyond

    def spread(self, repeats: int) -> None:
        problem, solution = SPREAD_EXAMPLE / "problem.py", SPREAD_EXAMPLE / "solution_cuda.py"
        options = EvalOptions(platform="cuda", baselines=())
        medians = []
        for _ in range(repeats):
            verdict, _ = self.evaluate(problem, solution, options)
            if verdict.timing is None:
                raise RuntimeError(f"{solution.name}: {verdict.verdict}: {verdict.reason}")
            medians.append(verdict.timing.median_ms)
        spread = (max(medians) - min(medians)) / statistics.fmean(medians)
        self.rows.append(("spread of the median", f"{100 * spread:.2f} %",
                          f"{repeats} evaluations of {SPREAD_EXAMPLE.name}/cuda: "
                          + ", ".join(f"{m * 1e3:.2f}" for m in medians) + " us; target <= 1%"))
        self.record["spread"] = {"medians_ms": medians, "relative": spread}

    def examples(self) -> None:
        results = {}
        for folder in sorted(path.parent for path in EXAMPLES.glob("*/problem.py")):
            if self.left_s() < 40:
                self.rows.append((f"example {folder.name}", "skipped", "deadline"))
                continue
            compile_ms = None
            for language, baselines in (("cuda", ("eager", "compile")), ("triton", ("eager",))):
                solution = folder / f"solution_{language}.py"
                options = EvalOptions(platform="cuda", baselines=baselines, trials=2, timing=EXAMPLE_TIMING)
                try:
                    verdict, wall = self.evaluate(folder / "problem.py", solution, options)
                except Exception as exc:  # a broken example is reported, and the others still run
                    self.rows.append((f"example {folder.name} {language}", "FAILED", str(exc).splitlines()[0][:150]))
                    continue
                compile_ms = verdict.compile_ms if language == "cuda" else compile_ms
                vs_compile = compile_ms / verdict.runtime_ms if compile_ms and verdict.runtime_ms else None
                results[f"{folder.name}/{language}"] = {"verdict": verdict.verdict, "runtime_ms": verdict.runtime_ms,
                                                        "eager_ms": verdict.eager_ms, "compile_ms": compile_ms,
                                                        "wall_s": wall}
                detail = (f"eager {_ms(verdict.eager_ms)} ({_x(verdict.speedup_vs_eager)}), "
                          f"compile {_ms(compile_ms)} ({_x(vs_compile)})" if verdict.correct
                          else f"{verdict.reason[:110]} [{verdict.rule}]")
                self.rows.append((f"example {folder.name} {language}",
                                  f"{verdict.verdict} {_ms(verdict.runtime_ms)}", detail))
        self.record["examples"] = results

    # ---- output ----------------------------------------------------------------------------------------
    def finish(self) -> None:
        self.pool.close()
        width = max(len(row[0]) for row in self.rows) if self.rows else 10
        lines = [f"{name:<{width}}  {value:<22}  {detail}" for name, value, detail in self.rows]
        print("\n".join(["", "kforge GPU benchmarks", "-" * 21, *lines]), flush=True)
        if self.out is not None:
            (self.out / "gpu_bench.json").write_text(json.dumps({"rows": self.rows, **self.record}, indent=2))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f} us" if value < 1 else f"{value:.3f} ms"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="folder for gpu_bench.json and verdict logs")
    parser.add_argument("--deadline-s", type=float, default=300.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU is visible to torch: these benchmarks need one")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    bench = Bench(args.out, args.deadline_s)
    facts = CudaPlatform().describe()
    bench.record["device"] = facts
    bench.rows.append(("device", facts.get("device", "?"), ", ".join(f"{k} {v}" for k, v in facts.items()
                                                                       if k not in ("device", "platform"))))
    bench.section("clock", bench.clock, needs_s=10)
    bench.section("overhead", bench.overhead, needs_s=40)
    bench.section("spread", lambda: bench.spread(args.repeats), needs_s=8 * args.repeats)
    bench.section("examples", bench.examples, needs_s=60)
    bench.finish()


if __name__ == "__main__":
    main()
