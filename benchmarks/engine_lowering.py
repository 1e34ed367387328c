"""Which problems the builtin engine lowers, per language, and (with --judge) whether its first kernel is correct.

    python benchmarks/engine_lowering.py [PROBLEM_OR_FOLDER ...] [--languages cpp triton]
    python benchmarks/engine_lowering.py [PROBLEM_OR_FOLDER ...] --judge cuda [--jobs 4] [--deadline-s 300]

For each problem (default: every file of benchmarks/engine_suite), capture, simplify, partition and render the
backend's first variant (`kforge.engine.propose.propose`). A problem is *lowered* in a language when that
yields a candidate; otherwise its one-line refusal is printed. With `--judge PLATFORM` (cpu: C++, cuda: Triton),
that first variant is also judged by the harness on the platform, correctness only (no timing, no baselines:
seconds per problem), and every verdict other than correct is printed with its rule and reason. How fast the
tuned kernels are is for `kforge suite ... --model builtin` or benchmarks/builtin_bench.py.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import EvalOptions, evaluate
from kforge.verify.sandbox import WorkerPool

SUITE = Path(__file__).resolve().parent / "engine_suite"
LANGUAGE = {"cpu": "cpp", "cuda": "triton"}


def problem_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths or [SUITE]:
        found.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return found


def lowering(files: list[Path], languages: list[str]) -> None:
    lowered = dict.fromkeys(languages, 0)
    started = time.perf_counter()
    for path in files:
        problem = load_problem(path)
        for language in languages:
            try:
                propose(problem, language, limit=1)
                lowered[language] += 1
            except Exception as exc:  # a refusal (LoweringError) or a fault: either way, not lowered
                print(f"{path.name} [{language}]: {str(exc).splitlines()[0][:150]}")
    print(f"{len(files)} problems in {time.perf_counter() - started:.0f} s; lowered: "
          + ", ".join(f"{language} {count}/{len(files)} ({100 * count / len(files):.0f}%)"
                      for language, count in lowered.items()))


def judging(files: list[Path], platform: str, deadline_s: float, jobs: int) -> None:
    """Judge each problem's first variant for correctness, `jobs` problems at once (each thread its own worker
    pool): no timing is taken, so evaluations may share the device."""
    language = LANGUAGE[platform]
    options = EvalOptions(platform=platform, language=language, measure=False, baselines=())
    counts = {"correct": 0, "not lowered": 0, "wrong": 0, "not judged": 0}
    started = time.monotonic()
    lock = threading.Lock()
    capturing = threading.Lock()

    def report(kind: str, line: str) -> None:
        with lock:
            counts[kind] += 1
            print(line, flush=True)

    def judge_share(share: list[Path], workdir: Path) -> None:
        with WorkerPool(spares=1) as pool:
            for path in share:
                if time.monotonic() - started > deadline_s:
                    report("not judged", f"{path.name}: not judged (the deadline of {deadline_s:.0f} s is spent)")
                    continue
                one = time.monotonic()
                try:
                    with capturing:  # loading runs the reference under a global seed and capture traces it:
                        # neither is safe in two threads at once, so only the evaluations overlap
                        problem = load_problem(path)
                        source = propose(problem, language, limit=1).variants[0].source
                except Exception as exc:
                    report("not lowered", f"{path.name}: not lowered: {str(exc).splitlines()[0][:150]}")
                    continue
                candidate = workdir / path.name
                candidate.write_text(source)
                verdict = evaluate(problem, candidate, options, pool=pool)  # loaded once, above
                pool.replenish()
                seconds = time.monotonic() - one
                if verdict.correct:
                    report("correct", f"{path.name}: correct ({seconds:.1f} s)")
                else:
                    reason = " ".join(verdict.reason.split())[:300]
                    report("wrong", f"{path.name}: {verdict.verdict} [{verdict.rule or '-'}] ({seconds:.1f} s): "
                                    f"{reason}")

    with tempfile.TemporaryDirectory(prefix="kforge-lowering-") as workdir:
        threads = [threading.Thread(target=judge_share, args=(files[index::jobs], Path(workdir)))
                   for index in range(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    total = len(files)
    print(f"{total} problems on {platform} ({language}) in {time.monotonic() - started:.0f} s: "
          + ", ".join(f"{name} {count}" for name, count in counts.items())
          + f"; lowered and correct: {100 * counts['correct'] / total:.0f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--languages", nargs="+", default=["cpp", "triton"])
    parser.add_argument("--judge", choices=sorted(LANGUAGE), help="judge each first variant on this platform")
    parser.add_argument("--deadline-s", type=float, default=1e9, help="judge no further problem after this")
    parser.add_argument("--jobs", type=int, default=1, help="problems judged at once (correctness only)")
    args = parser.parse_args()
    files = problem_files(args.paths)
    if args.judge:
        judging(files, args.judge, args.deadline_s, max(1, args.jobs))
    else:
        lowering(files, args.languages)


if __name__ == "__main__":
    main()
