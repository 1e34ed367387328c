"""What the kernel sandbox costs: prints figures, asserts nothing.

    python benchmarks/sandbox_overhead.py [--starts 8] [--calls 200]

Starts workers alternately without the sandbox (`python -m kforge.verify.worker`, as before it existed) and with
it (`kforge.verify.worker_start`, as the harness starts every worker now), and reports for each:
  start     seconds from launching the process to its greeting (Python and torch imported, ready to judge);
  plan      seconds the harness spends writing the worker's plan (data/sandbox.toml filled in);
  call      microseconds per call of a small torch operation in the started worker, to show whether the
            limits slow what a candidate does once loaded (seccomp runs a filter on every system call).
An evaluation starts two workers (the candidate's and the reference's), so its cost is twice the start delta.
Target (the sandbox issue): at most 0.2 s per evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kforge.verify.sandbox import scrubbed_environment, writable_caches
from kforge.verify.sandbox_rules import confinement_for
from kforge.verify.worker_layout import BUILDS, candidate_caches

PROBE = ("import time, torch\nx = torch.randn(1024)\nstarted = time.perf_counter()\nfor _ in range({calls}):\n"
         "    torch.nn.functional.relu(x).sum().item()\n"
         "print('PER_CALL_US', (time.perf_counter() - started) / {calls} * 1e6)\n")


def start_worker(confined: bool) -> tuple[float, float]:
    """(seconds to the greeting, seconds writing the plan) for one worker, started as a candidate's is (its builds
    and caches in its own directory), killed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="kforge-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    env = scrubbed_environment(candidate_caches(directory), directory)
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    plan_s = 0.0
    command = [sys.executable, "-m", "kforge.verify.worker", "--reply-fd", str(write_fd), "--cache-dir",
               str(directory / BUILDS)]
    if confined:
        plan = directory / "confinement.json"
        plan.write_text(confinement_for(directory, writable_caches(None, env), env).to_json())
        plan_s = time.perf_counter() - started
        command = [sys.executable, "-m", "kforge.verify.worker_start", "--confine", str(plan), "--", *command[3:]]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, pass_fds=(write_fd,), cwd=directory, env=env)
    os.close(write_fd)
    ready, _, _ = select.select([read_fd], [], [], 120)
    elapsed = time.perf_counter() - started
    greeting = os.read(read_fd, 1 << 16) if ready else b""
    process.kill()
    process.wait()
    os.close(read_fd)
    report = json.loads(greeting.splitlines()[0] if greeting else b"{}").get("confinement") or {}
    if confined and report.get("missing"):
        print("note: this worker did not enforce every limit:", report["missing"])
    return elapsed, plan_s


def per_call_us(confined: bool, calls: int) -> float:
    """A small operation's cost per call in a process confined (or not) the way workers are."""
    directory = Path(tempfile.mkdtemp(prefix="kforge-bench-"))
    env = scrubbed_environment({}, directory)
    code = PROBE.format(calls=calls)
    if confined:
        plan = directory / "confinement.json"
        plan.write_text(confinement_for(directory, [], env).to_json())
        code = (f"from kforge.verify import confine\nconfine.apply(confine.Confinement.from_json(open({str(plan)!r})"
                f".read()))\n{code}")
    output = subprocess.run([sys.executable, "-c", code], env=env, cwd=directory, capture_output=True, text=True,
                            timeout=300).stdout
    return float(output.split("PER_CALL_US")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=8, help="workers started of each kind, alternately")
    parser.add_argument("--calls", type=int, default=2000, help="calls of the small operation per process")
    args = parser.parse_args()
    starts: dict[bool, list[float]] = {False: [], True: []}
    plans: list[float] = []
    calls: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.starts):
        for confined in (False, True):
            elapsed, plan_s = start_worker(confined)
            starts[confined].append(elapsed)
            if confined:
                plans.append(plan_s)
    for _ in range(3):
        for confined in (False, True):
            calls[confined].append(per_call_us(confined, args.calls))
    plain, boxed = statistics.median(starts[False]), statistics.median(starts[True])
    print(f"worker start to greeting, median of {args.starts}: without the sandbox {plain:.3f} s, "
          f"with it {boxed:.3f} s (spread {min(starts[True]):.3f}-{max(starts[True]):.3f} s)")
    print(f"  of which writing the plan: {statistics.median(plans) * 1000:.1f} ms")
    print(f"  per evaluation (two workers): {2 * (boxed - plain):+.3f} s")
    print(f"small torch op per call, median of 3 processes: without {statistics.median(calls[False]):.2f} us, "
          f"with {statistics.median(calls[True]):.2f} us")


if __name__ == "__main__":
    main()
