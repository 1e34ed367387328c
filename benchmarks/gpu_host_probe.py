"""Where a small GPU call's time goes, and whether pinning the worker to a core steadies the harness.

    python benchmarks/gpu_host_probe.py launch [--examples gated_channel_scale linear_gelu_tanh]
    python benchmarks/gpu_host_probe.py pinning [--example linear_gelu_tanh] [--repeats 5]
    python benchmarks/gpu_host_probe.py direct [--problems benchmarks/engine_suite/pool_avg2d_stride_pad.py ...]
    python benchmarks/gpu_host_probe.py replay [--problems benchmarks/engine_suite/*.py]

`launch`: for each example, the reference (eager), its CUDA C++ and Triton solutions and the builtin
engine's default Triton variant, four figures per forward, in microseconds:
  issue    host time to issue one call (200 calls back to back, no synchronize between them);
  stream   device events around 200 back-to-back calls, divided by 200 (the rate when launches overlap);
  device   device events around one call queued behind a 0.2 ms spin, so the host has finished issuing
           before the device reaches it: the device's own time for the call;
  harness  what the harness measures: synchronize, event, call, event, synchronize (median of 200).

`direct`: for each problem, eager and the builtin engine's default Triton variant twice: as generated (each
kernel launched through its compiled launcher once compiled, `_Direct`, and each kind of call replayed) and
with the `@_direct` lines removed (every launch through Triton's `kernel[grid](...)`, no replay), with the
same four figures and the largest difference
of either variant's output from eager's.

`replay`: for each problem, eager, the default Triton variant's forward (`model._forward`, every call through
its launchers) and the same module's replayed calls (engine/triton/replay.py), with the same four figures, and
whether the replay was recorded and computes bit for bit what the forward does on new inputs; last, the
geomeans over the problems of eager's time over the forward's and over the replayed call's.

`pinning`: the harness's own evaluation (kforge.verify.evaluate, no baselines) repeated on one solution
with the worker unpinned, pinned to one CPU next to the GPU, and pinned to all the CPUs next to it; the
spread of the median in each mode, with the CPU the worker ran on and the SM clock during each evaluation.

Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _figures(forward: Callable[[], Any]) -> dict[str, float]:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        forward()
    torch.cuda.synchronize()
    began = time.perf_counter_ns()
    for _ in range(200):
        forward()
    issue = (time.perf_counter_ns() - began) / 200 / 1e3
    torch.cuda.synchronize()
    start.record()
    for _ in range(200):
        forward()
    end.record()
    torch.cuda.synchronize()
    stream = start.elapsed_time(end) * 1e3 / 200
    device, harness = [], []
    spin_cycles = int(0.2e-3 * torch.cuda.get_device_properties(0).clock_rate * 1e3)
    for _ in range(200):
        torch.cuda.synchronize()
        torch.cuda._sleep(spin_cycles)
        start.record()
        forward()
        end.record()
        torch.cuda.synchronize()
        device.append(start.elapsed_time(end) * 1e3)
        torch.cuda.synchronize()
        start.record()
        forward()
        end.record()
        torch.cuda.synchronize()
        harness.append(start.elapsed_time(end) * 1e3)
    return {"issue": issue, "stream": stream, "device": statistics.median(device),
            "harness": statistics.median(harness)}


def launch(examples: list[str]) -> None:
    import torch

    from kforge.engine.propose import propose
    from kforge.problem import load_problem

    print(f"{'example':<26} {'forward':<16} {'issue':>7} {'stream':>7} {'device':>7} {'harness':>8}  (us)")
    with tempfile.TemporaryDirectory() as scratch, torch.no_grad():
        for example in examples:
            folder = EXAMPLES / example
            problem = _load(folder / "problem.py", f"probe_{example}")
            builtin = Path(scratch) / f"{example}_builtin.py"
            proposal = propose(load_problem(folder / "problem.py"), "triton", vendor_gemm=True, limit=1)
            builtin.write_text(proposal.variants[0].source)
            print(f"{example}: builtin variant {proposal.variants[0].label()}")
            inputs = [t.cuda() for t in problem.get_inputs()]
            contenders: list[tuple[str, Any]] = [("eager", problem.Model)]
            for label, path in (("cuda", folder / "solution_cuda.py"), ("triton", folder / "solution_triton.py"),
                                ("builtin triton", builtin)):
                contenders.append((label, _load(path, f"probe_{example}_{label.replace(' ', '_')}").ModelNew))
            for label, cls in contenders:
                torch.manual_seed(0)
                model = cls(*problem.get_init_inputs()).cuda()
                row = _figures(lambda model=model, inputs=inputs: model(*inputs))
                print(f"{example:<26} {label:<16} {row['issue']:>7.1f} {row['stream']:>7.1f} {row['device']:>7.1f} "
                      f"{row['harness']:>8.1f}", flush=True)


def direct(problems: list[str]) -> None:
    import torch

    from kforge.engine.propose import propose
    from kforge.problem import load_problem

    print(f"{'problem':<34} {'forward':<14} {'issue':>7} {'stream':>7} {'device':>7} {'harness':>8} {'max diff':>9}")
    with tempfile.TemporaryDirectory() as scratch, torch.no_grad():
        for index, path in enumerate(map(Path, problems)):
            problem = _load(path, f"probe_problem_{index}")
            source = propose(load_problem(path), "triton", limit=1).variants[0].source
            files = {"direct": source, "triton launch": "".join(
                line for line in source.splitlines(keepends=True) if not line.startswith("@_direct"))}
            contenders: list[tuple[str, Any]] = [("eager", problem.Model)]
            for label, text in files.items():
                file = Path(scratch) / f"{path.stem}_{label.replace(' ', '_')}.py"
                file.write_text(text)
                contenders.append((label, _load(file, f"probe_{index}_{label.replace(' ', '_')}").ModelNew))
            inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
            expected = None
            for label, cls in contenders:
                torch.manual_seed(0)
                model = cls(*problem.get_init_inputs()).cuda()
                out = model(*inputs)
                out = (out[0] if isinstance(out, (tuple, list)) else out).float()
                expected = out if expected is None else expected
                row = _figures(lambda model=model, inputs=inputs: model(*inputs))
                print(f"{path.stem[:34]:<34} {label:<14} {row['issue']:>7.1f} {row['stream']:>7.1f} "
                      f"{row['device']:>7.1f} {row['harness']:>8.1f} {(out - expected).abs().max().item():>9.1e}",
                      flush=True)


def _gpu_local_cpus() -> list[int]:
    """CPUs on the GPU's NUMA node that this process may run on (all allowed CPUs if sysfs does not say)."""
    allowed = sorted(os.sched_getaffinity(0))
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.split()[0]
        domain, rest = bus.lower().split(":", 1)
        text = Path(f"/sys/bus/pci/devices/{domain[-4:]}:{rest}/local_cpulist").read_text().strip()
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        return allowed
    local: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        local.update(range(int(low), int(high or low) + 1))
    return [cpu for cpu in allowed if cpu in local] or allowed


def pinning(example: str, repeats: int, wanted: list[str]) -> None:
    import kforge.verify.sandbox as sandbox
    from kforge.verify.evaluate import EvalOptions, evaluate

    local = _gpu_local_cpus()
    print(f"allowed CPUs {sorted(os.sched_getaffinity(0))}; next to the GPU {local}")
    original = sandbox._limit_child
    folder = EXAMPLES / example
    options = EvalOptions(platform="cuda", baselines=())
    sampler = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits", "-lms", "100"],
                               stdout=subprocess.PIPE, text=True)
    modes = [(mode, cpus) for mode, cpus in (("unpinned", None), ("one-cpu", {local[-1]}), ("gpu-node", set(local)))
             if mode in wanted]
    results: list[tuple[str, list[float]]] = []
    try:
        for mode, cpus in modes:
            def limit(limits: Any, cpus: set[int] | None = cpus) -> None:
                original(limits)
                if cpus is not None:
                    os.sched_setaffinity(0, cpus)
            sandbox._limit_child = limit
            medians = []
            for _ in range(repeats + 1):
                time.sleep(2.0)
                verdict = evaluate(folder / "problem.py", folder / "solution_cuda.py", options)
                if verdict.timing is None:
                    print(f"{mode}: {verdict.verdict}: {verdict.reason}")
                    break
                medians.append(verdict.timing.median_ms * 1e3)
                print(f"  {mode}: median {medians[-1]:.1f} us, IQR {verdict.timing.iqr_ms * 1e3:.1f} us", flush=True)
            results.append((mode, medians[1:]))  # the first evaluation also fills the build cache
    finally:
        sandbox._limit_child = original
        sampler.terminate()
        clocks = [int(line) for line in sampler.communicate(timeout=10)[0].split() if line.isdigit()]
    for mode, medians in results:
        if medians:
            spread = (max(medians) - min(medians)) / statistics.fmean(medians)
            print(f"{mode:<10} spread {100 * spread:5.1f}%  medians " + ", ".join(f"{m:.1f}" for m in medians))
    if clocks:
        print(f"SM clock samples: {len(clocks)}, min {min(clocks)}, median {statistics.median(clocks)}, "
              f"max {max(clocks)}")


def replay(problems: list[str]) -> None:
    import torch

    from kforge.engine.propose import propose
    from kforge.problem import load_problem

    print(f"{'problem':<34} {'forward':<14} {'issue':>7} {'stream':>7} {'device':>7} {'harness':>8}  replayed")
    figures: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as scratch, torch.no_grad():
        for index, path in enumerate(map(Path, problems)):
            problem = _load(path, f"probe_problem_{index}")
            file = Path(scratch) / f"{path.stem}_replay.py"
            file.write_text(propose(load_problem(path), "triton", limit=1).variants[0].source)
            torch.manual_seed(0)
            reference = problem.Model(*problem.get_init_inputs()).cuda()
            model = _load(file, f"probe_replay_{index}").ModelNew(*problem.get_init_inputs()).cuda()
            model.reference.load_state_dict(reference.state_dict())
            inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
            model(*inputs)  # recorded (and replayed once, checked against the call)
            fresh = [t.cuda() if isinstance(t, torch.Tensor) else t for t in problem.get_inputs()]
            replayed, forward = model(*fresh), model._forward(*fresh)
            pairs = zip(*(((x,) if isinstance(x, torch.Tensor) else x) for x in (replayed, forward)), strict=True)
            same = all(torch.equal(a, b) for a, b in pairs)
            planned = "yes, bit for bit" if any(model._plans.found.values()) and same else \
                "no (the forward runs)" if not any(model._plans.found.values()) else "DIFFERS"
            rows = {}
            for label, call in (("eager", functools.partial(reference, *inputs)),
                                ("forward", functools.partial(model._forward, *inputs)),
                                ("replayed", functools.partial(model, *inputs))):
                row = rows[label] = _figures(call)
                print(f"{path.stem[:34]:<34} {label:<14} {row['issue']:>7.1f} {row['stream']:>7.1f} "
                      f"{row['device']:>7.1f} {row['harness']:>8.1f}  {planned if label == 'replayed' else ''}",
                      flush=True)
            figures.append(rows)
    for figure in ("issue", "harness"):  # eager's time over each one's: above 1, faster than eager
        ratios = {label: statistics.geometric_mean([rows["eager"][figure] / rows[label][figure] for rows in figures])
                  for label in ("forward", "replayed")}
        print(f"geomean over {len(figures)} problems, eager's {figure} time over each: forward "
              f"{ratios['forward']:.2f}x, replayed {ratios['replayed']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("launch", "pinning", "direct", "replay"))
    parser.add_argument("--examples", nargs="+", default=["gated_channel_scale", "linear_gelu_tanh"])
    parser.add_argument("--example", default="linear_gelu_tanh")
    parser.add_argument("--problems", nargs="+", default=[
        str(ROOT / "benchmarks" / "engine_suite" / f"{name}.py") for name in
        ("pool_avg2d_stride_pad", "move_flip_symmetrize", "epilogue_linear_softplus_gain", "net_lenet_classifier")])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", nargs="+", default=["unpinned", "one-cpu", "gpu-node"],
                        help="pinning modes to run: unpinned, one-cpu, gpu-node")
    args = parser.parse_args()
    if args.what == "launch":
        launch(args.examples)
    elif args.what == "direct":
        direct(args.problems)
    elif args.what == "replay":
        replay(args.problems)
    else:
        pinning(args.example, args.repeats, args.modes)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
