"""Whether a torch.compile baseline is compiled once per problem, device and torch version: prints figures,
asserts nothing.

    python benchmarks/compile_cache.py [--problem P --solution S] [--platform cpu|cuda] [--repeats 2]

Evaluates one solution with the torch.compile baseline, in a fresh cache folder, `1 + --repeats` times one
after another (each evaluation its own worker processes, as in separate runs). Prints, per evaluation, the
seconds from the first round of timing torch.compile (which compiles) to the next step, the evaluation's
wall time, and the files in Inductor's cache afterwards: the first evaluation compiles and fills the cache,
the later ones find their code there (the same count of files, and a shorter first round).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kforge.verify.evaluate import EvalOptions, TimingSettings, evaluate
from kforge.verify.worker_layout import reference_caches

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "gated_channel_scale"
LANGUAGE = {"cpu": "cpp", "cuda": "triton"}


class FirstCompile:
    """A progress callback: the seconds from the message of torch.compile's first round to the next message."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.seconds: float | None = None

    def __call__(self, message: str) -> None:
        now = time.perf_counter()
        if self.started is not None and self.seconds is None:
            self.seconds = now - self.started
        if "the first run compiles" in message:
            self.started = now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", default="cpu", choices=sorted(LANGUAGE))
    parser.add_argument("--problem", type=Path, default=EXAMPLE / "problem.py")
    parser.add_argument("--solution", type=Path, help="default: the example's solution for the platform")
    parser.add_argument("--repeats", type=int, default=2, help="evaluations after the first (cold) one")
    args = parser.parse_args()
    language = LANGUAGE[args.platform]
    solution = args.solution or EXAMPLE / f"solution_{language}.py"
    with tempfile.TemporaryDirectory(prefix="kforge-compile-cache-") as folder:
        cache = Path(folder)
        options = EvalOptions(platform=args.platform, language=language, baselines=("compile",), cache_dir=cache,
                              timing=TimingSettings(rep_ms=50.0))
        print(f"{args.problem.name} with {solution.name} on {args.platform}; cache {cache}")
        print(f"{'evaluation':<12}{'first compile round s':>24}{'wall s':>10}{'inductor files':>16}  verdict")
        for index in range(1 + args.repeats):
            clock = FirstCompile()
            started = time.perf_counter()
            verdict = evaluate(args.problem, solution, options, progress=clock)
            wall = time.perf_counter() - started
            inductor = Path(reference_caches(cache)["TORCHINDUCTOR_CACHE_DIR"])  # the reference's own
            files = sum(1 for path in inductor.rglob("*") if path.is_file())
            label = "cold" if index == 0 else f"cached {index}"
            first = "-" if clock.seconds is None else f"{clock.seconds:.2f}"
            print(f"{label:<12}{first:>24}{wall:>10.1f}{files:>16}  {verdict.verdict} "
                  f"(compile {verdict.compile_ms} ms)")


if __name__ == "__main__":
    main()
