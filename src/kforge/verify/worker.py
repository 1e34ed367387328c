"""The sandboxed worker: the only process in which a candidate's code ever runs.

Started by `sandbox.Worker` through `worker_start.py`, which confines the process first. It reads one JSON request
per line on stdin and answers one JSON line on the reply descriptor; anything the candidate prints goes
to the log the harness keeps. Everything this process reports is treated by the harness as untrusted:
outputs travel as files read back with `weights_only`, and every comparison happens in the harness.

Import order matters: the clocks and the tamper snapshot are taken here, before any candidate import.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

# Importing the platforms (cpu, cuda) captures their clocks, events and synchronize before any candidate
# code exists in this process (and once for every worker a fork server starts): the package loads them lazily.
from kforge.platforms import Platform, cpu, cuda, get_platform, mps, rocm, xpu  # noqa: F401
from kforge.problem import Problem, import_file, load_problem, seed_everything
from kforge.verify import run_phase, tensors
from kforge.verify.builds import BuildFailure, BuildRecorder, compiler_errors
from kforge.verify.ops import record_ops
from kforge.verify.protocol import (
    BatchReply,
    BatchRequest,
    BuildReply,
    BuildRequest,
    ExitRequest,
    Failure,
    FailureKind,
    Greeting,
    HandOverReply,
    HandOverRequest,
    LoadReply,
    LoadRequest,
    ProfileReply,
    ProfileRequest,
    RunReply,
    RunRequest,
    SandboxReport,
    StageReply,
    StageRequest,
    TimeReply,
    TimeRequest,
    TryReply,
    TryRequest,
    parse_request,
)
from kforge.verify.tamper import CandidateWatch
from kforge.verify.timing import run_timing, second_clock

_TRACEBACK_LINES = 12
# Fresh memory poisoned before each correctness call, beyond what the allocator caches: enough for the
# outputs and workspaces of any kernel whose inputs are this many times smaller.
_POISON_INPUT_MULTIPLE = 4
_POISON_MIN_BYTES = 64 << 20
# Exit status of a worker retired because its device context is unusable.
_EXIT_DEVICE_LOST = 70


class RequestFailed(Exception):
    """A request that ends in a verdict-worthy failure of the candidate."""

    def __init__(self, kind: FailureKind, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.rule = rule


class WorkerState:
    def __init__(self, cache_dir: Path) -> None:
        self.builds = BuildRecorder(cache_dir)
        self.builds.install()
        self.watch = CandidateWatch()
        self.platform: Platform | None = None
        self.problem: Problem | None = None
        self.model: Any = None  # the model loaded last: what `run` and `profile` call
        self.models: dict[str, Any] = {}  # every model loaded, by the role it was loaded as: what `time` calls
        self.candidate_loaded = False
        self.batch = Batch()

    # ---- requests ----------------------------------------------------------------------------------------
    def load(self, request: LoadRequest) -> LoadReply:
        self.platform = get_platform(request.platform)
        self.problem = load_problem(request.problem, check_runs=False)
        seed = request.seed
        solution = request.solution
        model_class = self.problem.model_class if solution is None else self._candidate_class(Path(solution))
        model = _built(model_class, self.problem, self.platform, seed)
        if request.compile:
            model = torch.compile(model)
        self.model = self.models[request.role] = model
        self.candidate_loaded = solution is not None
        if solution is not None:  # the run phase (issue 38): no programs, processes or sockets from here on
            self.platform.prepare_run()
            run_phase.enter(request.language, request.platform)
        self._check_tamper()
        return LoadReply(build_s=self.builds.seconds, builds=self.builds.builds)

    def profile(self, request: ProfileRequest) -> ProfileReply:
        """Profile the loaded model's forward with torch.profiler (advice for the analyst, never a verdict)."""
        from kforge.profiling import profile_callable

        problem, platform = self._ready()

        def make_inputs(seed: int) -> list[Any]:
            return problem.inputs(seed, device=platform.device)

        with torch.no_grad():
            profile = profile_callable(lambda inputs: self.model(*inputs), make_inputs, platform,
                                       calls=request.calls, seed=request.seed)
        self._check_tamper()
        return ProfileReply(profile=profile.model_dump(mode="json"))

    def build(self, request: BuildRequest) -> BuildReply:
        """Import a candidate only, so its extensions compile into the cache (see verify/prebuild.py)."""
        self._import_candidate(Path(request.solution))
        self._check_tamper()
        return BuildReply(build_s=self.builds.seconds, builds=self.builds.builds)

    def try_variant(self, request: TryRequest) -> TryReply:
        """One variant of the search: imported beside those tried before, called once for the harness to compare,
        timed, and let go (its memory freed before the next). Nothing here is a verdict: the harness picks the
        variants it judges by these figures, and judges them in a worker of their own."""
        if self.problem is None or self.problem.path != Path(request.problem):
            self.problem = load_problem(request.problem, check_runs=False)
        self.platform = platform = get_platform(request.platform)
        problem = self.problem
        builds_before = self.builds.seconds
        _free_memory(platform)  # what the last variant's failure still held
        model_class = self._candidate_class(Path(request.solution))
        self.candidate_loaded = True
        try:
            times = self._try_model(model_class, problem, platform, request)
        finally:
            del model_class
            _free_memory(platform)
        self._check_tamper()
        return TryReply(build_s=self.builds.seconds - builds_before, times_ns=times)

    def _try_model(self, model_class: Any, problem: Problem, platform: Platform, request: TryRequest) -> list[int]:
        """Build a variant's model, hand over its output on the search's inputs, and time it."""
        model = _built(model_class, problem, platform, request.seed)

        def make_inputs(seed: int) -> list[Any]:
            return problem.inputs(seed, device=platform.device)

        try:
            with torch.no_grad():
                output = self._keep(model(*make_inputs(request.input_seed)))
                platform.synchronize()
                tensors.save({"output": output}, Path(request.out))
                del output
                return run_timing(lambda inputs: model(*inputs), make_inputs, platform, request.plan,
                                  self._keep).times_ns
        except RequestFailed:
            raise
        except Exception as exc:
            raise RequestFailed("runtime_error", f"forward failed: {_describe(exc)}") from exc

    def run(self, request: RunRequest) -> RunReply:
        problem, platform = self._ready()
        inputs = problem.inputs(request.seed, request.variant, platform.device)
        outputs = []
        ops: set[str] = set()
        reserve = max(_POISON_MIN_BYTES, _POISON_INPUT_MULTIPLE * _tensor_bytes(inputs))
        for _ in range(request.calls):
            threads_before = threading.active_count()
            platform.poison_free_memory(reserve)
            output, called_ops = self._call(inputs, record=request.record_ops)
            ops |= called_ops
            outputs.append(output)
            if threading.active_count() > threads_before:
                raise RequestFailed("rejected", "the candidate left a thread running after it returned",
                                    rule="dynamic.thread")
        tensors.save({"outputs": outputs, "inputs_after": tensors.plain_copy(inputs),
                      "buffers": self._buffers()}, Path(request.out))
        return RunReply(ops=sorted(ops))

    def time(self, request: TimeRequest) -> TimeReply:
        started = second_clock()
        problem, platform = self._ready()
        role = request.role
        model = self.model if role is None else self.models.get(role)
        if model is None:
            raise RequestFailed("runtime_error", f"no model loaded as {role}")
        variant = request.variant
        plan = request.plan

        def make_inputs(seed: int) -> list[Any]:
            return problem.inputs(seed, variant, device=platform.device)

        with torch.no_grad():
            result = run_timing(lambda inputs: model(*inputs), make_inputs, platform, plan, self._keep)
        self._check_tamper()
        doubt = platform.audit_timing(result.times_ns) if self.candidate_loaded else None
        if doubt is not None:
            raise RequestFailed("rejected", doubt.message, rule=doubt.rule)
        tensors.save({str(index): value for index, value in result.spot_outputs.items()}, Path(request.out))
        return TimeReply(times_ns=result.times_ns, second_clock_ns=result.second_clock_ns,
                         lead_in_ns=result.lead_in_ns, host_bound=result.host_bound,
                         # The whole request, not only the loop: drawing large inputs or saving large outputs
                         # takes the harness's waiting time too, and must not read as stopped clocks.
                         loop_ns=second_clock() - started, spots=sorted(result.spot_outputs))

    def stage(self, request: StageRequest) -> StageReply:
        """Draw a batch's inputs ahead of it, so that the harness's clock sees only the calls."""
        problem, platform = self._ready()
        model = self.model if request.role is None else self.models.get(request.role)
        if model is None:
            raise RequestFailed("runtime_error", f"no model loaded as {request.role}")
        self.batch = Batch(model, [problem.inputs(request.seed + index, request.variant, platform.device)
                                   for index in range(request.count)])
        platform.synchronize()
        return StageReply(count=request.count)

    def run_batch(self, request: BatchRequest) -> BatchReply:
        """Staged calls `start` to `start + count` back to back, then one device-wide wait: nothing else runs
        inside the harness's clock. Outputs are held, not copied (a copy would be timed too); the harness picks
        which to check afterwards."""
        _, platform = self._ready()
        # A batch of no calls takes the same path, so that the harness, subtracting its time, takes away all of
        # a batch's own cost but the calls.
        if request.start + request.count > len(self.batch.inputs):
            raise RequestFailed("runtime_error", f"{len(self.batch.inputs)} input sets staged, calls "
                                f"{request.start} to {request.start + request.count} asked for")
        try:
            with torch.no_grad():
                self.batch.call(request.start, request.count)
            platform.synchronize()
        except Exception as exc:
            raise RequestFailed("runtime_error", f"forward failed: {_describe(exc)}") from exc
        if not request.hold:
            self.batch.release(request.start, request.count)
        return BatchReply(count=request.count)

    def hand_over(self, request: HandOverRequest) -> HandOverReply:
        """Copy the outputs of the calls the harness chose into a file, then let the batch go."""
        held = self.batch.outputs
        if any(call not in held for call in request.calls):
            raise RequestFailed("runtime_error", f"the batch holds the outputs of calls {sorted(held)[:20]}")
        kept = {str(call): self._keep(held[call]) for call in request.calls}
        self.batch = Batch()
        self._check_tamper()
        tensors.save(kept, Path(request.out))
        return HandOverReply(calls=request.calls)

    # ---- helpers -----------------------------------------------------------------------------------------
    def _ready(self) -> tuple[Problem, Platform]:
        if self.problem is None or self.platform is None or self.model is None:
            raise RequestFailed("runtime_error", "no model loaded")
        return self.problem, self.platform

    def _candidate_class(self, path: Path) -> Any:
        """The candidate's `ModelNew`, imported (its extensions built) after the tamper snapshot."""
        self.watch.before_candidate()
        model_class = getattr(self._import_candidate(path), "ModelNew", None)
        if model_class is None:
            raise RequestFailed("runtime_error", "the solution defines no ModelNew")
        return model_class

    def _import_candidate(self, path: Path) -> Any:
        try:
            return import_file(path, "kforge_candidate")
        except BuildFailure as exc:
            raise RequestFailed("compile_error", compiler_errors(exc.log)) from None
        except BaseException as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, BuildFailure):
                raise RequestFailed("compile_error", compiler_errors(cause.log)) from None
            raise RequestFailed("runtime_error", f"importing the solution failed: {_describe(exc)}") from None

    def _call(self, inputs: list[Any], record: bool) -> tuple[Any, set[str]]:
        """Call the model once; return a copy of its output as the caller's stream saw it, and its operators."""
        _, platform = self._ready()
        try:
            with torch.no_grad():
                if record:
                    output, ops = record_ops(lambda: self.model(*inputs))
                else:
                    output, ops = self.model(*inputs), set()
            # Copied before any device-wide wait: on a GPU the copy runs on the caller's stream, so it reads
            # what the next kernel on that stream would read, and work still running elsewhere shows.
            kept = self._keep(output)
            platform.synchronize()
            settled = self._keep(output) if platform.asynchronous else kept
        except RequestFailed:
            raise
        except Exception as exc:
            raise RequestFailed("runtime_error", f"forward failed: {_describe(exc)}") from exc
        self._check_tamper()
        if not tensors.same_bits(kept, settled):
            raise RequestFailed("rejected", "the output was still being written after the call returned: the "
                                "kernel ran outside the caller's stream, which never waited for it",
                                rule="dynamic.unsynchronized")
        return kept, ops

    def _keep(self, output: Any) -> Any:
        try:
            return tensors.plain_copy(output)
        except tensors.UnsafeOutput as exc:
            raise RequestFailed("rejected", str(exc), rule="dynamic.output-type") from None

    def _buffers(self) -> dict[str, Any]:
        """The model's buffers after the calls, by name: the harness compares those the reference's calls change
        (verify/state.py)."""
        if not isinstance(self.model, torch.nn.Module):
            return {}
        try:
            named = list(self.model.named_buffers())
        except Exception as exc:
            raise RequestFailed("runtime_error", f"listing the model's buffers failed: {_describe(exc)}") from exc
        try:
            return {str(name): tensors.plain_copy(buffer) for name, buffer in named}
        except tensors.UnsafeOutput as exc:
            raise RequestFailed("rejected", f"a buffer: {exc}", rule="dynamic.output-type") from None

    def _check_tamper(self) -> None:
        finding = self.watch.finding(self.candidate_loaded)
        if finding is not None:
            raise RequestFailed("rejected", finding.message, rule=finding.rule)


class Batch:
    """The input sets staged for batches of calls and, once they ran, what each call returned (by its index)."""

    def __init__(self, model: Any = None, inputs: list[list[Any]] | None = None) -> None:
        self.model = model
        self.inputs = inputs or []
        self.outputs: dict[int, Any] = {}
        self._places: set[int] = set()

    def call(self, start: int, count: int) -> None:
        """Call the model on staged input sets `start` to `start + count`. An output whose memory an output held
        already uses (a kernel that writes one buffer each time) is copied at once, so that every call's answer
        can still be checked; the copy is the candidate's to pay for."""
        for index in range(start, start + count):
            output = self.model(*self.inputs[index])
            places = _storages(output)
            if places & self._places:
                output = tensors.plain_copy(output)
                places = _storages(output)
            self._places |= places
            self.outputs[index] = output

    def release(self, start: int, count: int) -> None:
        """Let the outputs of calls `start` to `start + count` go (a warm-up's)."""
        for index in range(start, start + count):
            self.outputs.pop(index, None)
        self._places = set().union(*(_storages(output) for output in self.outputs.values()))


def _storages(value: Any) -> set[int]:
    """The addresses of the memory the tensors in an output live in (several views of one buffer share one)."""
    if type(value) is torch.Tensor:
        return {value.untyped_storage().data_ptr()}
    if isinstance(value, (tuple, list)):
        return set().union(*(_storages(item) for item in value)) if value else set()
    return set()


def _built(model_class: Any, problem: Problem, platform: Platform, seed: int) -> Any:
    """`model_class(*get_init_inputs())` under `seed`, on the platform's device."""
    seed_everything(seed)
    try:
        model = model_class(*problem.init_inputs())
        return model.to(platform.device) if isinstance(model, torch.nn.Module) else model
    except Exception as exc:
        raise RequestFailed("runtime_error", f"ModelNew(*get_init_inputs()) failed: {_describe(exc)}") from exc


def _free_memory(platform: Platform) -> None:
    """Return what the models let go to the device, so that the next variant has all of it."""
    gc.collect()
    empty_cache = getattr(getattr(torch, platform.device.type, None), "empty_cache", None)
    if callable(empty_cache):
        empty_cache()


def _tensor_bytes(values: list[Any]) -> int:
    return sum(value.numel() * value.element_size() for value in values if isinstance(value, torch.Tensor))


def _describe(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if "kforge" not in frame.filename.replace("\\", "/").split("/")[-3:-1]]
    if frames:
        frame = frames[-1]
        text += f"\n  at {Path(frame.filename).name}:{frame.lineno} in {frame.name}"
    return "\n".join(text.splitlines()[-_TRACEBACK_LINES:])


def serve(state: WorkerState, requests: Any, reply: Any) -> None:
    handlers: dict[type[Any], Callable[[Any], Any]] = {
        LoadRequest: state.load, RunRequest: state.run, TimeRequest: state.time, StageRequest: state.stage,
        BatchRequest: state.run_batch, HandOverRequest: state.hand_over, BuildRequest: state.build,
        TryRequest: state.try_variant, ProfileRequest: state.profile}
    for line in requests:
        request = parse_request(line)
        if isinstance(request, ExitRequest):
            return
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            answer: Any = handlers[type(request)](request)
        except RequestFailed as exc:
            answer, error = Failure(kind=exc.kind, message=str(exc), rule=exc.rule), exc
        except MemoryError as exc:
            answer, error = Failure(kind="runtime_error", message="out of memory (the worker's limit)"), exc
        except Exception as exc:
            answer, error = Failure(kind="runtime_error", message=_describe(exc)), exc
        lost = state.platform.device_lost(error) if error is not None and state.platform is not None else None
        if lost:
            answer = Failure(kind="crashed",
                             message=f"the candidate left the device unusable ({lost}); this worker was retired")
        reply.write(answer.model_copy(update={"worker_s": time.perf_counter() - started}).model_dump_json() + "\n")
        reply.flush()
        if lost:
            # Every later call in this process would fail the same way, and tearing the context down can
            # hang: leave at once, so that the harness's next worker starts on a clean context.
            os._exit(_EXIT_DEVICE_LOST)


def main(argv: list[str] | None = None, confinement: dict[str, list[str]] | None = None) -> None:
    """Serve requests; `confinement` is what worker_start enforced before this module was imported."""
    parser = argparse.ArgumentParser(description="kforge evaluation worker (started by the harness)")
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--cache-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    reply = os.fdopen(args.reply_fd, "w", buffering=1)
    state = WorkerState(args.cache_dir)
    # The first dispatch-mode recording imports a good part of torch; pay for it before the greeting, so a
    # worker waiting in a pool is ready to judge at once.
    record_ops(lambda: torch.ones(2) + 1)
    report = SandboxReport.model_validate(confinement or {"enforced": [], "missing": ["not confined"]})
    reply.write(Greeting(pid=os.getpid(), confinement=report).model_dump_json() + "\n")
    reply.flush()
    serve(state, sys.stdin, reply)


if __name__ == "__main__":
    main()
