"""Compiling candidates ahead of their evaluation, on the CPU cores, while the GPU is busy with others.

A CUDA extension takes about a minute to compile and the GPU sits idle meanwhile. `Prebuilder` compiles
candidates' extensions in workers that see no GPU, several at once. Each builds in its own directory, as a
candidate's evaluation worker does; once the worker is dead the harness keeps the libraries in its build store
(verify/artifact_store.py, keyed by the candidate's whole source), from which an evaluation of the same
candidate gets them, checked, and loads them in about a second. Its `build_s` then reports loading only; the
compile time is in the PrebuildResult.

A candidate is imported here exactly as in an evaluation: in a sandboxed worker, and only after the
static policy let it through. A failed prebuild is not a verdict: the evaluation builds again and
reports the compiler's errors itself.

    python -m kforge.verify.prebuild --platform cuda SOLUTION.py [SOLUTION.py ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kforge.paths import cache_dir
from kforge.platforms import Platform, PlatformError, get_platform
from kforge.verify.artifact_store import ArtifactStore, Restored, artifact_key
from kforge.verify.policy import Policy
from kforge.verify.protocol import BuildReply, BuildRequest, Failure, MalformedReply
from kforge.verify.sandbox import Limits, Worker, WorkerFailure
from kforge.verify.static_check import check_source

_START_S = 120.0
# Compilers are not candidates: give them room (nvcc on torch's headers takes a few GB per job).
_BUILD_MEMORY_MB = 32768


@dataclass(frozen=True)
class PrebuildResult:
    solution: Path | str  # the file, or the source text, it was given
    ok: bool
    build_s: float
    message: str = ""
    stored: int = 0  # files the build store took from this build (0 when everything came from the store)


def build_environment(platform: Platform, jobs_per_build: int) -> dict[str, str]:
    """The environment of a build worker: the evaluation's, with no GPU visible and a cap on compile jobs. Its
    caches lie in its own directory (sandbox.Worker), as a candidate's evaluation worker's do."""
    return {**platform.worker_environment(), "CUDA_VISIBLE_DEVICES": "", "MAX_JOBS": str(max(1, jobs_per_build))}


def prebuild(solution: Path | str, environment: dict[str, str], cache: Path, policy: Policy | None = None,
             timeout_s: float = 900.0) -> PrebuildResult:
    """Compile one candidate's extensions into the build store of `cache`; never raises for a bad candidate.
    `solution` is a file, or a candidate's source text."""
    started = time.perf_counter()
    try:
        source = solution.read_text() if isinstance(solution, Path) else solution
        violations = check_source(source, policy or Policy())
    except (OSError, SyntaxError, ValueError) as exc:
        return PrebuildResult(solution, False, 0.0, f"not built: {exc}")
    if violations:
        return PrebuildResult(solution, False, 0.0, f"not built: the policy rejects it ({violations[0]})")
    store, key = ArtifactStore.under(cache), artifact_key(source)
    restored: Restored | None = None
    reply: BuildReply | Failure | None = None
    worker = Worker(None, Limits(memory_mb=_BUILD_MEMORY_MB, limit_address_space=False), environment)
    try:
        worker.start(_START_S)
        restored = store.restore(key, worker.directory, worker.owner)
        copy = worker.hand_over("solution.py", source)
        reply = worker.request(BuildRequest(solution=str(copy)), BuildReply, timeout_s)
    except (WorkerFailure, MalformedReply) as failure:
        return PrebuildResult(solution, False, time.perf_counter() - started, str(failure))
    finally:
        worker.kill()
        # Kept only from a worker that is dead, and whose candidate imported: a build cut short is no library.
        stored = store.ingest(key, worker.directory, restored) if isinstance(reply, BuildReply) else 0
        worker.close()
    assert reply is not None
    if isinstance(reply, Failure):
        return PrebuildResult(solution, False, time.perf_counter() - started,
                              (reply.message.splitlines() or ["the build failed"])[0][:300])
    return PrebuildResult(solution, True, reply.build_s, stored=stored)


class Prebuilder:
    """Builds candidates in the background, `parallel` at a time, sharing the machine's cores."""

    def __init__(self, platform: Platform, cache: Path | None = None, parallel: int = 4,
                 policy: Policy | None = None, timeout_s: float = 900.0) -> None:
        self.cache = (cache or cache_dir()).expanduser()
        self.policy = policy
        self.timeout_s = timeout_s
        cores = os.cpu_count() or 2
        self.environment = build_environment(platform, cores // max(1, parallel))
        self._pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="kforge-prebuild")

    def submit(self, solution: Path | str) -> Future[PrebuildResult]:
        """Build a candidate (a file, or its source text) in the background."""
        return self._pool.submit(prebuild, solution, self.environment, self.cache, self.policy, self.timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> Prebuilder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile candidates' extensions into kforge's build cache.")
    parser.add_argument("solutions", nargs="+", type=Path)
    parser.add_argument("--platform", default="auto")
    parser.add_argument("--parallel", type=int, default=4, help="builds at once (each gets cores / parallel jobs)")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        platform = get_platform(args.platform)
    except PlatformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failed = 0
    with Prebuilder(platform, args.cache_dir, args.parallel) as builder:
        futures = [builder.submit(path) for path in args.solutions]
        for future in futures:
            result = future.result()
            failed += not result.ok
            status = f"built in {result.build_s:.1f} s" if result.ok else result.message
            print(f"{result.solution}: {status}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
