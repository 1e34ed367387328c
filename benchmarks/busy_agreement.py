"""Do optimize, eval and suite agree on one kernel's speedup, on a quiet machine and under a load started here?

Runs, for one bundled example on the CPU: `kforge optimize --model builtin` (its best judged again at the end,
eager timed in turn beside it), then `kforge eval` of the file it wrote, then `kforge suite --solutions` on the
same pair; each speedup over eager is read with its 95% interval (from `kforge runs --json`, `kforge eval
--json` and the suite's results.jsonl). That is done quiet, then with spinning processes started by this script
(outside kforge's own process tree, so kforge counts them as other work). It prints each figure, whether each
command said the machine was busy, and whether the three intervals overlap.

    python benchmarks/busy_agreement.py                      # gated_channel_scale, quiet then 2 x cores spinners
    python benchmarks/busy_agreement.py --spinners 0         # quiet only
    python benchmarks/busy_agreement.py --example temperature_softmax --spinners 4

The optimize step is the README's main command as a new user runs it (default timing, eager and torch.compile
baselines, a build cache of its own: cold builds), so its wall time is what the README promises.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPIN = "import time\nwhile True: time.perf_counter()\n"


def kforge(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFORGE_MODEL", "OPENAI_", "ANTHROPIC_"))}
    env["KFORGE_CACHE_DIR"] = str(cwd / "cache")  # a new user's: nothing built yet
    return subprocess.run([sys.executable, "-m", "kforge", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=3600)


def figures(example: str, work: Path, rep_ms: str | None) -> dict[str, dict[str, object]]:
    problem = ROOT / "examples" / example / "problem.py"
    db, best = work / "runs.db", work / "solutions" / "problem.py"
    best.parent.mkdir(parents=True, exist_ok=True)
    timing = ("--rep-ms", rep_ms) if rep_ms else ()
    started = time.monotonic()
    optimized = kforge("optimize", problem, "--model", "builtin", "--platform", "cpu", "--out", best, "--db", db,
                       *timing, cwd=work)
    if optimized.returncode != 0:
        sys.exit(f"optimize failed: {optimized.stderr[-2000:]}")
    run = json.loads(kforge("runs", "--json", "--db", db, cwd=work).stdout.splitlines()[0])
    found: dict[str, dict[str, object]] = {"optimize": _figures(run, time.monotonic() - started)}
    started = time.monotonic()
    evaluated = kforge("eval", problem, best, "--platform", "cpu", "--json", *timing, cwd=work)
    verdict = json.loads(evaluated.stdout)
    found["eval"] = _figures(verdict, time.monotonic() - started)
    started = time.monotonic()
    suite_dir = work / "suite"
    problems = work / "problems"
    problems.mkdir(exist_ok=True)
    (problems / "problem.py").write_text(problem.read_text())
    done = kforge("suite", problems, "--solutions", best.parent, "--out", suite_dir, "--platform", "cpu",
                  "--db", db, *timing, cwd=work)
    if done.returncode != 0:
        sys.exit(f"suite failed: {done.stderr[-2000:]}")
    row = json.loads((suite_dir / "results.jsonl").read_text().splitlines()[-1])
    found["suite"] = _figures(row, time.monotonic() - started)
    return found


def _figures(record: dict[str, Any], seconds: float) -> dict[str, Any]:
    """A verdict's, a run's or a suite row's speedups with their intervals, and whether it said busy."""
    return {"eager": (record["speedup_vs_eager"], record.get("speedup_vs_eager_interval")),
            "compile": (record["speedup_vs_compile"], record.get("speedup_vs_compile_interval")),
            "busy": record.get("machine_busy"), "seconds": seconds}


def overlap(found: dict[str, dict[str, Any]], baseline: str) -> bool:
    intervals = [one[baseline][1] for one in found.values()]
    if any(interval is None for interval in intervals):
        return False
    return max(low for low, _ in intervals) <= min(high for _, high in intervals)


def show(label: str, found: dict[str, dict[str, Any]]) -> None:
    print(f"\n{label}")
    for command, one in found.items():
        cells = []
        for baseline in ("eager", "compile"):
            value, interval = one[baseline]
            cells.append("-" if value is None else f"{value:.2f}x" + (
                f" ({interval[0]:.2f}-{interval[1]:.2f})" if interval else " (no interval)"))
        print(f"  {command:9s} vs eager {cells[0]:20s} vs compile {cells[1]:20s} "
              f"{'busy' if one['busy'] else 'quiet':6s} {one['seconds']:.0f} s")
    for baseline in ("eager", "compile"):
        print(f"  the three intervals vs {baseline} {'overlap' if overlap(found, baseline) else 'DO NOT overlap'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="gated_channel_scale")
    parser.add_argument("--spinners", type=int, default=2 * (os.cpu_count() or 1),
                        help="busy processes for the loaded pass (0: quiet pass only)")
    parser.add_argument("--rep-ms", default=None, help="milliseconds of timed calls (default: kforge's)")
    parser.add_argument("--skip-quiet", action="store_true")
    args = parser.parse_args()
    print(f"kforge busy-machine agreement: {args.example}, {os.cpu_count()} cores, load before: "
          f"{os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="kforge-busy-") as scratch:
        if not args.skip_quiet:
            show("quiet (no load started here)", figures(args.example, Path(scratch) / "quiet", args.rep_ms))
        if args.spinners:
            spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.spinners)]
            try:
                found = figures(args.example, Path(scratch) / "busy", args.rep_ms)
            finally:
                for spinner in spinners:
                    spinner.kill()
            show(f"loaded ({args.spinners} spinning processes)", found)


if __name__ == "__main__":
    main()
