"""Where the GPU spread of the median comes from: one kernel timed three ways, in fresh processes, clocks logged.

    python benchmarks/gpu_spread_probe.py [--example linear_gelu_tanh] [--processes 3] [--calls 300]

Each process loads the example's own CUDA C++ solution (our code, not a candidate) and times it with device
events around every call in three regimes:
  tight     inputs drawn once; calls back to back (a synchronize after each), no cache flush;
  host      what the harness does today: inputs drawn on the CPU and copied in, L2 flushed, device synchronized;
  device    inputs drawn on the GPU (same shapes), L2 flushed, device synchronized.
A background `nvidia-smi` samples the SM clock every 50 ms; each regime's row shows the clocks seen while it
ran. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(example: str, calls: int) -> None:
    import torch

    folder = ROOT / "examples" / example
    problem = _load(folder / "problem.py", "probe_problem")
    solution = _load(folder / "solution_cuda.py", "probe_solution")
    torch.manual_seed(0)
    model = solution.ModelNew(*problem.get_init_inputs()).cuda()
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    slot = [t.cuda() for t in problem.get_inputs()]

    def timed(prepare) -> float:
        prepare()
        torch.cuda.synchronize()
        start.record()
        model(*slot)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3

    def host_draw() -> None:
        for target, fresh in zip(slot, problem.get_inputs(), strict=True):
            target.copy_(fresh)
        flush.fill_(1)

    def device_draw() -> None:
        for target in slot:
            target.normal_()
        flush.fill_(2)

    results = {}
    with torch.no_grad():
        for name, prepare in (("tight", lambda: None), ("host", host_draw), ("device", device_draw)):
            for _ in range(100):
                timed(prepare)
            began = time.time()
            times = [timed(prepare) for _ in range(calls)]
            results[name] = {"median_us": statistics.median(times), "min_us": min(times),
                             "began": began, "ended": time.time()}
    print(json.dumps(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="linear_gelu_tanh")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.example, args.calls)
        return
    sampler = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm", "--format=csv,noheader,nounits",
                                "-lms", "50"], stdout=subprocess.PIPE, text=True)
    rows = []
    try:
        for process in range(args.processes):
            time.sleep(2.0)  # idle between processes, as between evaluations
            done = subprocess.run([sys.executable, __file__, "--child", "--example", args.example,
                                   "--calls", str(args.calls)], capture_output=True, text=True, timeout=300)
            if done.returncode:
                print(done.stderr[-2000:])
                continue
            rows.append((process, json.loads(done.stdout.strip().splitlines()[-1])))
    finally:
        sampler.terminate()
        output, _ = sampler.communicate(timeout=10)
    samples = _clock_samples(output)
    print(f"{'process':<8} {'regime':<7} {'median us':>10} {'min us':>8}  SM clock while timed (MHz: min/median/max)")
    for process, result in rows:
        for regime, figures in result.items():
            seen = [mhz for at, mhz in samples if figures["began"] <= at <= figures["ended"]]
            clock = f"{min(seen)}/{statistics.median(seen):.0f}/{max(seen)} ({len(seen)} samples)" if seen else "-"
            print(f"{process:<8} {regime:<7} {figures['median_us']:>10.2f} {figures['min_us']:>8.2f}  {clock}")
    if samples:
        every = [mhz for _, mhz in samples]
        print(f"all SM clock samples: {len(every)}, min {min(every)}, median {statistics.median(every)}, "
              f"max {max(every)}")


def _clock_samples(output: str) -> list[tuple[float, int]]:
    """(epoch seconds, MHz) from `nvidia-smi --query-gpu=timestamp,clocks.sm` lines: '2026/12/02 19:10:01.123, 1980'."""
    samples = []
    for line in output.splitlines():
        stamp, _, mhz = line.rpartition(",")
        try:
            at = datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((at, int(mhz.strip())))
        except ValueError:
            continue
    return samples


if __name__ == "__main__":
    main()
