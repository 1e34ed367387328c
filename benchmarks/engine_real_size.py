"""The builtin engine at the sizes people run: `kforge optimize --model builtin` on each real-size problem, timed.

    python benchmarks/engine_real_size.py [--platform cuda] [--language triton] [--time-budget S]
                                          [--timeout S] [PROBLEM.py ...]

Problems: those given, else `benchmarks/problems/real_size/*.py` (the real-size suite, its README: GEMMs,
convolutions, attention, norms, reductions, pointwise chains and small networks at the sizes models run, tens of
GFLOP or hundreds of MB per call, so the device decides the time, not the host). Each runs as a user would run
it, in a fresh process with a store of its own; the script prints the run's wall time, how many variants the
search tried and judged (the run's `stopped:` line), and the best's line (judged again at the end, timed in turn
with eager and torch.compile, with the speedups). Asserts nothing: figures for docs/builtin.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL_SIZE = ROOT / "benchmarks" / "problems" / "real_size"


def run_one(problem: Path, args: argparse.Namespace, scratch: Path) -> None:
    command = [sys.executable, "-m", "kforge", "optimize", str(problem), "--model", "builtin",
               "--platform", args.platform, "--language", args.language, "--db", str(scratch / f"{problem.stem}.db"),
               "--out", str(scratch / f"{problem.stem}_best.py")]
    if args.time_budget:
        command += ["--time-budget", str(args.time_budget)]
    started = time.monotonic()
    try:
        # Wide enough that the progress lines are not folded.
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout,
                              env={**os.environ, "COLUMNS": "240"}, check=False)
        output, status = done.stdout + done.stderr, str(done.returncode)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        status = f"timed out after {args.timeout:.0f} s"
    wall = time.monotonic() - started
    lines = " ".join(output.split("\n")).split("  ")  # rich folds long lines: join, then split on indents
    joined = " ".join(part.strip() for part in lines)
    print(f"\n== {problem.stem}: {wall:.0f} s wall, exit {status}")
    for marker in ("stopped:", "best:"):
        at = joined.find(marker)
        if at >= 0:
            end = joined.find(" wrote ", at) if marker == "best:" else joined.find(" best:", at)
            print("  " + joined[at:end if end > at else at + 400].strip())
    for line in output.splitlines():
        if "builtin: search:" in line or "harness judged" in line:
            print("  " + line.strip())
    if status != "0":
        print("\n".join(output.splitlines()[-25:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", type=Path)
    parser.add_argument("--platform", default="cuda")
    parser.add_argument("--language", default="triton")
    parser.add_argument("--time-budget", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per problem")
    args = parser.parse_args()
    problems = args.problems or sorted(REAL_SIZE.glob("*.py"))
    with tempfile.TemporaryDirectory(prefix="kforge-real-size-") as scratch:
        for problem in problems:
            run_one(problem, args, Path(scratch))


if __name__ == "__main__":
    main()
