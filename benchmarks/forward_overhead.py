"""Host time of the builtin engine's generated Triton `forward`, its kernel launches left out: prints a table.

    python benchmarks/forward_overhead.py [--examples gated_channel_scale ...] [--calls 2000] [--repeats 7]
    python benchmarks/forward_overhead.py --problems benchmarks/engine_suite/*.py

For each bundled example, the engine's default Triton variant (as `benchmarks/gpu_host_probe.py launch`
renders it: vendor GEMM allowed, the first variant) is imported in this process (our own generated code, not
a candidate) and every `@triton.jit` kernel in it is replaced by a recorder that keeps the launch's grid and
arguments and launches nothing. What is left is the Python and framework work `forward` does around its
launches, on CPU tensors. Columns, per call:
  forward   microseconds of host time (median over --repeats runs of --calls calls);
  direct    the forward through its `_Direct` launchers (as on a GPU once compiled), Triton's compiled
            launcher replaced by one that does nothing;
  replayed  the same launcher, for a replayed call (engine/triton/replay.py: a later call of a kind issues
            the first one's recorded launches); "-" where the kind was not recorded (the framework computed
            part of it): compare with `direct`;
  launches  kernel launches;
  args      arguments passed to them (run-time and compile-time), a proxy for the launcher's own cost
            (each argument is type-checked and specialised by Triton on every launch).
The launcher's cost itself needs a GPU: run `python benchmarks/gpu_host_probe.py launch` there.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


class Recorder:
    """Stands in for a JIT function: `kernel[grid](*args, **kwargs)` records the call and does nothing else."""

    def __init__(self) -> None:
        self.launches = 0
        self.args = 0

    def __getitem__(self, grid: Any) -> Recorder:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.launches += 1
        self.args += len(args) + len(kwargs)


def imported(source: str, name: str, scratch: Path) -> Any:
    """The generated module `source`, written to `scratch` (Triton reads a kernel's source from its file), imported."""
    path = scratch / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_without_launches(source: str, name: str, scratch: Path) -> tuple[Any, list[Recorder]]:
    """The generated module, imported, with each JIT kernel replaced by a Recorder."""
    import triton

    module = imported(source, name, scratch)
    recorders = []
    for attribute, value in list(vars(module).items()):
        if isinstance(value, triton.runtime.JITFunction):
            recorder = Recorder()
            setattr(module, attribute, recorder)
            recorders.append(recorder)
    return module, recorders


class _Driver:
    """Triton's active driver as the replay asks it: device 0, stream 0 (no GPU here)."""

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def get_current_stream(device: int) -> int:
        return 0


class _CompiledStub:
    """What `kernel[grid](...)` returns once compiled, with a launcher that launches nothing."""

    function = None
    packed_metadata = None

    @staticmethod
    def run(*args: Any) -> None:
        return None


class _JitStub:
    """A JIT function's signature and parameters, compiling to `_CompiledStub`."""

    def __init__(self, kernel: Any) -> None:
        self.signature, self.params, self.device_caches = kernel.signature, kernel.params, {}

    def __getitem__(self, grid: Any) -> Any:
        return lambda *args, **kwargs: _CompiledStub


def load_replayed(source: str, name: str, scratch: Path) -> Any:
    """The generated module, imported, its launched kernels behind `_Direct` launchers of `_JitStub`s, replay on."""
    import triton

    module = imported(source, name, scratch)
    if not hasattr(module, "_REPLAYABLE"):
        return None
    direct = next(value for attribute, value in vars(module).items() if attribute.startswith("_Direct"))

    class StubDirect(direct):  # type: ignore[misc, valid-type]
        def __init__(self, kernel: Any) -> None:
            self.kernel, self.compiled = kernel, {}
            self.current_device, self.current_stream = _Driver.get_current_device, _Driver.get_current_stream

    for attribute, value in list(vars(module).items()):
        if isinstance(value, triton.runtime.JITFunction):
            setattr(module, attribute, StubDirect(_JitStub(value)))
    module._REPLAYABLE, module._DRIVER = True, _Driver
    module._agrees = lambda replayed, result: True  # the stub computes nothing: no outputs to compare
    return module


def per_call_us(forward: Any, calls: int, repeats: int) -> float:
    for _ in range(calls // 10):
        forward()
    runs = []
    for _ in range(repeats):
        began = time.perf_counter_ns()
        for _ in range(calls):
            forward()
        runs.append((time.perf_counter_ns() - began) / calls / 1e3)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", nargs="*", default=sorted(p.parent.name for p in EXAMPLES.glob("*/problem.py")))
    parser.add_argument("--problems", nargs="*", default=[], help="problem files to run instead of the examples")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    from kforge.engine.propose import propose
    from kforge.problem import load_problem

    torch.set_num_threads(1)
    paths = [Path(path) for path in args.problems] or [EXAMPLES / example / "problem.py" for example in args.examples]
    print(f"{'problem':<36} {'forward (us)':>12} {'direct':>7} {'replayed':>8} {'launches':>9} {'args':>5}  variant")
    with tempfile.TemporaryDirectory() as scratch, torch.no_grad():
        for path in paths:
            example = path.parent.name if path.name == "problem.py" else path.stem
            problem = load_problem(path)
            variant = propose(problem, "triton", vendor_gemm=True, limit=1).variants[0]
            module, recorders = load_without_launches(variant.source, f"overhead_{example}", Path(scratch))
            torch.manual_seed(0)
            model = module.ModelNew(*problem.init_inputs())
            inputs = problem.inputs(0)
            model(*inputs)
            launches = sum(r.launches for r in recorders)
            arguments = sum(r.args for r in recorders)
            micro = per_call_us(lambda model=model, inputs=inputs: model(*inputs), args.calls, args.repeats)
            direct = replayed = "-"
            module = load_replayed(variant.source, f"replayed_{example}", Path(scratch))
            if module is not None:
                torch.manual_seed(0)
                model = module.ModelNew(*problem.init_inputs())
                model(*inputs)
                call = lambda model=model, inputs=inputs: model._forward(*inputs)  # noqa: E731
                direct = f"{per_call_us(call, args.calls, args.repeats):.2f}"
                if any(model._plans.found.values()):
                    call = lambda model=model, inputs=inputs: model(*inputs)  # noqa: E731
                    replayed = f"{per_call_us(call, args.calls, args.repeats):.2f}"
            vendor = "  (includes the vendor operator's own CPU time)" if variant.config.get("vendor") else ""
            print(f"{example:<36} {micro:>12.2f} {direct:>7} {replayed:>8} {launches:>9} {arguments:>5}  "
                  f"{variant.label()}{vendor}", flush=True)


if __name__ == "__main__":
    main()
