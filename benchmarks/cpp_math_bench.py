"""The C++ backend's branch-free math against <cmath>: nanoseconds per element of one loop, one thread.

    python benchmarks/cpp_math_bench.py [--target baseline|x86-64-v3] [--elements 1048576] [--runs 40]

Builds the helpers of data/engine/cpp/common.cpp.j2 twice with g++ (kforge.engine.cpp_math): once with the
backend's spellings (ops.toml) and once with the <cmath> call each replaced, one loop per op, then times the
two loops of each op alternately and keeps the fastest run of each. Prints whether GCC vectorized each loop.
Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from kforge.engine import cpp_math

# <cmath> spellings of the ops the backend now spells itself (what ops.toml held before).
CMATH = {
    "erf": "std::erf({0})",
    "gelu": "(0.5f * {0} * (1.0f + std::erf({0} * 0.70710678118654752f)))",
    "log": "std::log({0})",
    "log1p": "std::log1p({0})",
    "expm1": "std::expm1({0})",
    "sin": "std::sin({0})",
    "cos": "std::cos({0})",
    "tanh": "std::tanh({0})",
    "pow": "std::pow({0}, {1})",
}


def cmath_spelling(op: str, operands: list[str]) -> str:
    return CMATH[op].format(*operands)


def fastest_ns(library: cpp_math.MathLibrary, op: str, args: list[torch.Tensor]) -> int:
    started = time.perf_counter_ns()
    library(op, *args)
    return time.perf_counter_ns() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="baseline", help="baseline, or a -march value (x86-64-v3: AVX2+FMA)")
    parser.add_argument("--elements", type=int, default=1 << 20)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(args.elements, generator=generator) * 8.0 - 4.0
    positive = torch.rand(args.elements, generator=generator) * 100.0 + 1e-3
    with tempfile.TemporaryDirectory(prefix="kforge-math-") as folder:
        ours_dir, theirs_dir = Path(folder, "ours"), Path(folder, "cmath")
        ours_dir.mkdir()
        theirs_dir.mkdir()
        ours = cpp_math.build(ours_dir, list(CMATH), args.target)
        theirs = cpp_math.build(theirs_dir, list(CMATH), args.target, cmath_spelling)
        print(f"{'op':<7}{'<cmath> ns/elem':>17}{'vectorized':>12}{'kforge ns/elem':>16}{'vectorized':>12}"
              f"{'speedup':>9}")
        for op in CMATH:
            operands = [positive, x] if op == "pow" else [positive] if op in ("log", "log1p") else [x]
            best = {"cmath": 1 << 62, "ours": 1 << 62}
            for _ in range(args.runs):
                best["cmath"] = min(best["cmath"], fastest_ns(theirs, op, operands))
                best["ours"] = min(best["ours"], fastest_ns(ours, op, operands))
            per = {name: ns / args.elements for name, ns in best.items()}
            print(f"{op:<7}{per['cmath']:>17.2f}{theirs.vectorized(op)!s:>12}{per['ours']:>16.2f}"
                  f"{ours.vectorized(op)!s:>12}{per['cmath'] / per['ours']:>8.1f}x")
    print(f"({args.elements} float32 elements, one thread, fastest of {args.runs} alternated runs, "
          f"target {args.target})")


if __name__ == "__main__":
    main()
