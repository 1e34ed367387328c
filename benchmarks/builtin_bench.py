"""The builtin engine on the bundled examples and other problems: correctness, speed, roofline share.

    python benchmarks/builtin_bench.py [--platform cpu|cuda|auto] [--budget-s 60] [--deadline-s 540]
                                       [--examples NAME ...] [--problems PATH ...] [--json FILE]

Problems: the bundled examples (`examples/*/problem.py`, all of them unless --examples names some), and any
problem files given with --problems (a row named by the file's stem), such as the bandwidth-sized ones in
`benchmarks/problems/*_h200.py`; with --problems alone, only those. For each problem and platform: the
engine's proposal (`kforge.engine.propose`: capture, simplify, then the backend's variants: C++/OpenMP on
cpu, Triton on cuda; vendor GEMM and convolution variants are offered under the vendor-GEMM policy); tune
them through the harness within --budget-s (short timing, no baselines); judge the winner once more with
the harness's default timing and both baselines (eager and torch.compile). The roofline share uses the
reference's FLOPs and minimum bytes (`kforge.profiling.workload`) and the device's measured peaks
(`kforge.profiling.peaks`: a large copy's bandwidth, a large matmul's rate).

Prints one row per problem and geomeans (all, and the GEMM/convolution problems alone), the figures that
issue 7's targets are stated in. Asserts nothing: a table to record in docs/builtin.md.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from kforge.engine.capture import LoweringError
from kforge.engine.ir import HEAVY_OPS
from kforge.engine.propose import propose
from kforge.engine.tune import TuneSettings, Variant, tune
from kforge.platforms import get_platform
from kforge.problem import Problem, load_problem
from kforge.profiling.peaks import measure_peaks
from kforge.profiling.roofline import roofline
from kforge.profiling.workload import measure_workload
from kforge.verify.evaluate import EvalOptions, TimingSettings, evaluate
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TUNE_TIMING = TimingSettings(warmup_ms=25, rep_ms=150, min_reps=10, max_reps=200)


@dataclass
class Row:
    problem: str
    platform: str
    heavy: str
    verdict: str = "-"
    judged: int = 0
    config: str = ""
    runtime_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    vs_eager: float | None = None
    vs_compile: float | None = None
    bound: str = ""
    achieved: str = ""
    roofline_share: float | None = None
    copy_share: float | None = None  # achieved bytes/s over the measured copy bandwidth
    kernels: int = 0  # how many kernels the engine's solution runs in order
    engine_s: float | None = None  # proposing and tuning, before the final judgement with the baselines
    note: str = ""


def backend_variants(platform: str, problem: Problem) -> tuple[tuple[Variant, ...], str, int]:
    """The engine's proposal (capture, simplify, backend), the heavy ops it found, and its kernels' count."""
    language = "triton" if platform == "cuda" else "cpp"
    proposal = propose(problem, language, vendor_gemm=True, limit=24 if language == "triton" else 8)
    heavy = sorted({node.op for node in proposal.program.all_nodes() if node.op in HEAVY_OPS})
    return proposal.variants, "+".join(heavy) or "-", proposal.kernels


def run_example(name: str, path: Path, platform: str, budget_s: float, pool: WorkerPool, workdir: Path,
                say: Callable[[str], None]) -> Row:
    """One problem's row; an error of the engine or the harness is the row's note, never the end of the run."""
    try:
        return _run_example(name, path, platform, budget_s, pool, workdir, say)
    except Exception as exc:  # a benchmark of many problems reports each failure and goes on
        return Row(name, platform, "-", verdict="error", note=f"{type(exc).__name__}: {exc}"[:160])


def _run_example(name: str, path: Path, platform: str, budget_s: float, pool: WorkerPool, workdir: Path,
                 say: Callable[[str], None]) -> Row:
    problem = load_problem(path)
    row = Row(name, platform, "-")
    started = time.monotonic()
    try:
        found, row.heavy, row.kernels = backend_variants(platform, problem)
    except LoweringError as exc:
        row.note = str(exc)
        return row
    language = "triton" if platform == "cuda" else "cpp"
    policy = Policy().allowing_vendor_gemm()
    quick = EvalOptions(platform=platform, language=language, baselines=(), timing=TUNE_TIMING, policy=policy,
                        trials=2)
    sources: dict[str, Path] = {}

    def judge(source: str, options: EvalOptions = quick) -> Verdict:
        path = sources.setdefault(source, workdir / f"{name}_{platform}_{len(sources)}.py")
        path.write_text(source)
        return evaluate(problem.path, path, options, pool=pool)

    result = tune(found, judge, TuneSettings(budget_s=budget_s), progress=say)
    row.judged = len(result.trials)
    row.engine_s = time.monotonic() - started
    if result.best is None:
        failures = [trial.verdict for trial in result.trials]
        row.verdict = failures[0].verdict if failures else "-"
        row.note = failures[0].reason[:120] if failures else result.stop_reason
        return row
    row.config = ", ".join(f"{k}={v}" for k, v in result.best.config.items())
    final = judge(result.best.variant.source, EvalOptions(platform=platform, language=language, policy=policy))
    row.verdict = final.verdict
    row.runtime_ms, row.eager_ms, row.compile_ms = final.runtime_ms, final.eager_ms, final.compile_ms
    row.vs_eager, row.vs_compile = final.speedup_vs_eager, final.speedup_vs_compile
    if not final.correct:
        row.note = final.reason[:120]
    elif final.compile_ms is None and final.warnings:
        row.note = "no torch.compile figure: " + final.warnings[0][:200]
    elif final.runtime_ms:
        fill_roofline(row, problem, platform, final.runtime_ms)
    return row


def fill_roofline(row: Row, problem: Problem, platform_name: str, runtime_ms: float) -> None:
    platform = get_platform(platform_name)
    model = problem.make_model(0).to(platform.device)
    inputs = problem.inputs(0, device=platform.device)
    workload = measure_workload(model, inputs)
    peaks = measure_peaks(platform, getattr(torch, workload.dtype))
    line = roofline(workload, runtime_ms * 1000.0, peaks)
    row.bound = line.bound
    row.roofline_share = line.fraction_of_bound
    row.copy_share = line.achieved_bytes_per_s / peaks.bytes_per_s
    row.achieved = (f"{line.achieved_bytes_per_s / 1e9:.1f} GB/s" if line.bound == "memory"
                    else f"{line.achieved_flops_per_s / 1e12:.2f} TFLOP/s")


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _fmt(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_table(rows: list[Row]) -> None:
    header = ("problem", "platform", "heavy", "kernels", "engine s", "verdict", "judged", "runtime ms", "eager ms",
              "compile ms", "vs eager", "vs compile", "bound", "achieved", "roofline", "of copy BW")
    lines = [header]
    for row in rows:
        lines.append((row.problem, row.platform, row.heavy, str(row.kernels or "-"), _fmt(row.engine_s, ".0f"),
                      str(row.verdict), str(row.judged),
                      _fmt(row.runtime_ms, ".4f"), _fmt(row.eager_ms, ".4f"), _fmt(row.compile_ms, ".4f"),
                      _fmt(row.vs_eager, ".2f", "x"), _fmt(row.vs_compile, ".2f", "x"), row.bound or "-",
                      row.achieved or "-", _fmt(None if row.roofline_share is None else 100 * row.roofline_share,
                                                ".0f", "%"),
                      _fmt(None if row.copy_share is None else 100 * row.copy_share, ".0f", "%")))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for index, line in enumerate(lines):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    for row in rows:
        if row.config or row.note:
            print(f"  {row.problem} [{row.platform}]: {row.config}{'; ' if row.config and row.note else ''}{row.note}")
    for platform in sorted({row.platform for row in rows}):
        mine = [row for row in rows if row.platform == platform and row.verdict == "correct"]
        heavy = [row for row in mine if row.heavy != "-"]
        for label, subset in (("all", mine), ("GEMM/conv", heavy)):
            eager = geomean([row.vs_eager for row in subset if row.vs_eager])
            compiled = geomean([row.vs_compile for row in subset if row.vs_compile])
            print(f"geomean [{platform}, {label}, {len(subset)} problems]: vs eager {_fmt(eager, '.2f', 'x')}, "
                  f"vs torch.compile {_fmt(compiled, '.2f', 'x')}")
    total = [row for row in rows if row.verdict != "-"]
    attempted = [row for row in rows if not row.note.startswith("skipped")]
    lowered = [row for row in attempted if row.kernels]
    print(f"lowered: {len(lowered)} of {len(attempted)} problems; correct: "
          f"{sum(row.verdict == 'correct' for row in total)} of {len(total)} emitted solutions")
    for platform in sorted({row.platform for row in attempted}):
        mine = [row for row in attempted if row.platform == platform]
        # A problem without a correct kernel counts 1.0x: the user keeps the baseline.
        eager = geomean([row.vs_eager if row.verdict == "correct" and row.vs_eager else 1.0 for row in mine])
        compiled = geomean([row.vs_compile if row.verdict == "correct" and row.vs_compile else 1.0 for row in mine])
        print(f"geomean over every attempted problem [{platform}, {len(mine)}; no correct kernel counts 1.0x]: "
              f"vs eager {_fmt(eager, '.2f', 'x')}, vs torch.compile {_fmt(compiled, '.2f', 'x')}")


def selected_problems(examples: list[str] | None, files: list[Path] | None) -> list[tuple[str, Path]]:
    """(row name, problem file) pairs: the examples named (all when neither option is given), then the files."""
    chosen = []
    if examples is not None or files is None:
        chosen = sorted((path.parent.name, path) for path in EXAMPLES.glob("*/problem.py")
                        if examples is None or path.parent.name in examples)
    for path in files or []:
        if not path.is_file():
            raise SystemExit(f"builtin_bench: no problem file {path}")
        chosen.append((path.stem, path.resolve()))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--budget-s", type=float, default=60.0, help="tuning wall budget per example")
    parser.add_argument("--deadline-s", type=float, default=540.0, help="no new example starts after this")
    parser.add_argument("--examples", nargs="*", default=None, help="bundled examples by folder name")
    parser.add_argument("--problems", nargs="*", type=Path, default=None, help="problem files outside examples/")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    platforms = ["cpu", "cuda"] if args.platform == "auto" and torch.cuda.is_available() else \
        ["cpu"] if args.platform == "auto" else [args.platform]
    problems = selected_problems(args.examples, args.problems)
    deadline = time.monotonic() + args.deadline_s
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kforge-builtin-bench-") as work, WorkerPool(spares=1) as pool:
        for platform in platforms:
            for name, path in problems:
                if time.monotonic() > deadline:
                    rows.append(Row(name, platform, "-", note="skipped: deadline"))
                    continue
                print(f"== {name} on {platform}", flush=True)
                rows.append(run_example(name, path, platform, args.budget_s, pool, Path(work),
                                        lambda text: print(f"   {text}", flush=True)))
                if args.json:  # after every problem: a run cut short keeps what it measured
                    args.json.write_text(json.dumps([asdict(row) for row in rows], indent=2))
    print()
    print_table(rows)


if __name__ == "__main__":
    main()
