"""Which problems the builtin engine lowers, per language, without judging any kernel: prints figures, asserts nothing.

    python benchmarks/engine_lowering.py [PROBLEM_OR_FOLDER ...] [--languages cpp triton]

For each problem (default: every file of benchmarks/engine_suite), capture, simplify, partition and render the
backend's first variant (`kforge.engine.propose.propose`). A problem is *lowered* in a language when that
yields a candidate; otherwise its one-line refusal is printed. Whether the candidate is correct and fast is the
harness's question: `kforge suite ... --model builtin` or benchmarks/builtin_bench.py answer it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kforge.engine.propose import propose
from kforge.problem import load_problem

SUITE = Path(__file__).resolve().parent / "engine_suite"


def problem_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths or [SUITE]:
        found.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--languages", nargs="+", default=["cpp", "triton"])
    args = parser.parse_args()
    files = problem_files(args.paths)
    lowered = dict.fromkeys(args.languages, 0)
    started = time.perf_counter()
    for path in files:
        problem = load_problem(path)
        for language in args.languages:
            try:
                propose(problem, language, limit=1)
                lowered[language] += 1
            except Exception as exc:  # a refusal (LoweringError) or a fault: either way, not lowered
                print(f"{path.name} [{language}]: {str(exc).splitlines()[0][:150]}")
    print(f"{len(files)} problems in {time.perf_counter() - started:.0f} s; lowered: "
          + ", ".join(f"{language} {count}/{len(files)} ({100 * count / len(files):.0f}%)"
                      for language, count in lowered.items()))


if __name__ == "__main__":
    main()
