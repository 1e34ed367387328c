"""The recorded-launch forward (kforge.engine.triton.replay): what it records, what it refuses, and that a
replayed call computes what the forward computes.

On the CPU the launches go to a stand-in for Triton's compiled launcher that does each kernel's arithmetic
with torch, from the tensors the forward passes or from the raw pointers a replay passes (resolved back to
the memory they point into). The GPU test at the end runs generated solutions on the device.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import torch

from kforge.engine.propose import propose
from kforge.engine.triton.replay import with_replay
from kforge.problem import load_problem
from kforge.templating import template_environment

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"


def _kernel_scale(x, w, out, n, k):
    out[:n] = x[:n] * w[0] * k


def _kernel_shift(x, out, n):
    out[:n] = x[:n] + 1


def _kernel_total(x, out, n):
    out[0] = x[:n].sum()


class _Memory:
    """Every storage the kernels may be pointed into, to read a raw pointer back as the tensor it points to."""

    def __init__(self) -> None:
        self.bases: list[torch.Tensor] = []
        self.launches = 0
        self.misread = 0  # elements a raw pointer is misread by (a launcher that got pointers wrong)

    def note(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),))
        self.bases.append(flat)
        return t

    def flat(self, arg: Any, n: int) -> torch.Tensor:
        if isinstance(arg, torch.Tensor):
            self.note(arg)
            return arg.reshape(-1)
        for base in self.bases:
            start = base.data_ptr()
            if start <= arg < start + base.numel() * base.element_size():
                return base[((arg - start) // base.element_size() + self.misread) % base.numel():]
        raise AssertionError(f"a pointer into no known memory: {arg:#x}")

    def compute(self, function: Any, args: tuple[Any, ...]) -> None:
        self.launches += 1
        names = list(inspect.signature(function).parameters)
        n = args[names.index("n")]
        values = zip(names, args, strict=True)
        function(*(value if name in ("n", "k") else self.flat(value, n) for name, value in values))


class _StandIn:
    """Stands in for a `triton.jit` function: `kernel[grid](*args)` computes and returns a compiled kernel whose
    `run` computes too (from tensors, or from the pointers a replay passes)."""

    device_caches: ClassVar[dict[Any, Any]] = {}

    def __init__(self, function: Any, memory: _Memory) -> None:
        self.function, self.memory = function, memory
        self.signature = inspect.signature(function)
        self.params = [SimpleNamespace(is_constexpr=False) for _ in self.signature.parameters]

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any) -> Any:
            self.memory.compute(self.function, args)
            return SimpleNamespace(run=self.run, function=self.function, packed_metadata=None)
        return launch

    def run(self, x: int, y: int, z: int, stream: int, function: Any, metadata: Any, *rest: Any) -> None:
        assert (x, y, z) == (1, 1, 1) and rest[:3] == (None, None, None)
        self.memory.compute(function, rest[3:])


_SOLUTION = '''
import torch
import torch.nn as nn

{helpers}

_scale = _Direct(_StandIn(_kernel_scale, _MEMORY))
_shift = _Direct(_StandIn(_kernel_shift, _MEMORY))
_total = _Direct(_StandIn(_kernel_total, _MEMORY))


class _Reference(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([3.0]))


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.reference = _Reference(*args, **kwargs)

    def forward(self, x, k):
        rows = x.narrow(0, 1, x.shape[0] - 1)  # a view of the input, at an offset
        if not rows.is_contiguous():
            rows = rows.contiguous()  # the framework's copy: a call of this kind is not replayed
        scaled = rows.new_empty(rows.shape)  # an intermediate
        _scale[(1,)](rows, self.reference.weight, scaled, rows.numel(), k)
        out = torch.empty_like(scaled)
        _shift[(1,)](scaled, out, out.numel())
        total = torch.empty((1,), device=x.device, dtype=x.dtype)
        _total[(1,)](scaled, total, scaled.numel())
        return out.reshape(-1), total
'''


class _Driver:
    stream = 7

    @staticmethod
    def get_current_device() -> int:
        return 0

    @classmethod
    def get_current_stream(cls, device: int) -> int:
        return cls.stream


def _solution(source_of_model: str = _SOLUTION) -> tuple[dict[str, Any], _Memory]:
    """The test solution with replay, run against the stand-in launcher: its module namespace and memory."""
    helpers = template_environment("kforge", "data/engine/triton", trim_blocks=True).from_string(
        '{% import "_helpers.j2" as helpers %}{{ helpers.direct() }}').render()
    source = with_replay(source_of_model.format(helpers=helpers))
    assert "self._plans = _Plans()" in source
    memory = _Memory()
    triton = SimpleNamespace(runtime=SimpleNamespace(driver=SimpleNamespace(active=_Driver)),
                             knobs=SimpleNamespace(runtime=SimpleNamespace(launch_enter_hook=None)))
    namespace: dict[str, Any] = {"triton": triton, "_StandIn": _StandIn, "_MEMORY": memory, "__name__": "solution",
                                 "_kernel_scale": _kernel_scale, "_kernel_shift": _kernel_shift,
                                 "_kernel_total": _kernel_total}
    exec(compile(source, "solution.py", "exec"), namespace)
    allocate = namespace["_empty_strided"]
    namespace["_empty_strided"] = lambda *args, **kwargs: memory.note(allocate(*args, **kwargs))
    return namespace, memory


def _expected(x: torch.Tensor, weight: float, k: float) -> tuple[torch.Tensor, torch.Tensor]:
    scaled = x[1:] * weight * k
    return (scaled + 1).reshape(-1), scaled.sum().reshape(1)


def _counted(model: Any) -> list[int]:
    """Counts the calls that ran the forward itself (not a replay)."""
    calls = [0]
    forward = model._forward

    def counting(*args: Any) -> Any:
        calls[0] += 1
        return forward(*args)
    model._forward = counting
    return calls


def _check(model: Any, memory: _Memory, x: torch.Tensor, k: float, weight: float = 3.0) -> tuple[torch.Tensor, ...]:
    for t in (x, *model.parameters()):
        memory.note(t)
    with torch.no_grad():
        out, total = model(x, k)
    want_out, want_total = _expected(x, weight, k)
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(total, want_total)
    return out, total


def test_a_second_call_of_a_kind_replays_the_launches_on_this_calls_memory() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    first = _check(model, memory, torch.randn(5, 4), 2.0)
    assert forwards[0] == 1 and len(model._plans.found) == 1
    launches = memory.launches
    second = _check(model, memory, torch.randn(5, 4), 2.0)  # new values at a new address
    third = _check(model, memory, torch.randn(5, 4), 2.0)
    assert forwards[0] == 1, "the later calls of the kind replayed"
    assert memory.launches == launches + 6, "every kernel launched on every replayed call"
    storages = {t.untyped_storage().data_ptr() for t in (*first, *second, *third)}
    assert len(storages) == 6, "each call's outputs are memory of its own"
    plan = next(iter(model._plans.found.values()))
    assert len(plan.kept) >= 1, "the intermediate is kept for the calls of its kind"


def test_a_new_kind_of_call_is_recorded_and_a_framework_copy_is_never_replayed() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    _check(model, memory, torch.randn(5, 4), 2.0)
    _check(model, memory, torch.randn(5, 4), 0.5)  # another scalar: another kind
    assert forwards[0] == 2
    strided = torch.randn(4, 5).t()  # rows 1.. of it are not contiguous: the forward copies them
    _check(model, memory, strided, 2.0)
    _check(model, memory, torch.randn(4, 5).t(), 2.0)
    assert forwards[0] == 4, "a call with a framework copy runs the forward every time"
    assert sum(1 for plan in model._plans.found.values() if plan is False) == 1
    _check(model, memory, torch.randn(7, 3), 2.0)  # another shape
    _check(model, memory, torch.randn(7, 3), 2.0)
    assert forwards[0] == 5


def test_parameters_changed_in_place_replaced_or_swapped_are_what_a_replay_reads() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    _check(model, memory, torch.randn(5, 4), 2.0)
    with torch.no_grad():
        model.reference.weight.mul_(2)
    _check(model, memory, torch.randn(5, 4), 2.0, weight=6.0)
    assert forwards[0] == 1
    model.reference.weight.data = torch.tensor([-1.0])
    _check(model, memory, torch.randn(5, 4), 2.0, weight=-1.0)
    model.reference.weight = torch.nn.Parameter(torch.tensor([0.25]))
    _check(model, memory, torch.randn(5, 4), 2.0, weight=0.25)
    assert forwards[0] == 2, "a replaced parameter: the kind is recorded again"


def test_streams_modes_hooks_copies_and_the_limit() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    x = torch.randn(5, 4)
    _check(model, memory, x, 2.0)
    _Driver.stream = 9
    try:
        _check(model, memory, x, 2.0)
    finally:
        _Driver.stream = 7
    model.eval()
    _check(model, memory, x, 2.0)
    assert forwards[0] == 3, "another stream or mode is another kind"
    namespace["_RUNTIME"].launch_enter_hook = lambda *args: None  # a profiler: Triton's own path
    _check(model, memory, x, 2.0)
    namespace["_RUNTIME"].launch_enter_hook = None
    assert forwards[0] == 4
    original = namespace["ModelNew"]()
    _check(original, memory, x, 2.0)
    _check(original, memory, x, 2.0)
    twin = copy.deepcopy(original)
    assert not twin._plans.found, "a copy records its own calls"
    with torch.no_grad():
        twin.reference.weight.fill_(1.0)
    _check(twin, memory, x, 2.0, weight=1.0)
    _check(twin, memory, x, 2.0, weight=1.0)
    _check(original, memory, x, 2.0)
    for rows in range(3, 3 + namespace["_Plans"].LIMIT + 2):
        _check(model, memory, torch.randn(rows, 2), 1.0)
    assert len(model._plans.found) == namespace["_Plans"].LIMIT


def test_a_kind_whose_replay_disagrees_with_its_recorded_call_runs_the_forward() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    memory.misread = 1  # raw pointers read one element off: the replay at recording time disagrees
    for _ in range(3):
        _check(model, memory, torch.randn(9, 4), 2.0)
    assert forwards[0] == 3 and list(model._plans.found.values()) == [False]


def test_past_the_memory_budget_intermediates_are_allocated_on_every_call() -> None:
    namespace, memory = _solution()
    namespace["_Plans"].KEEP_BYTES = 0
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    for _ in range(3):
        _check(model, memory, torch.randn(5, 4), 2.0)
    plan = next(iter(model._plans.found.values()))
    assert forwards[0] == 1 and plan.kept == [] and len(plan.buffers) == 3 and model._plans.kept_bytes == 0


def test_a_failed_or_concurrent_recording_leaves_nothing_behind() -> None:
    namespace, memory = _solution()
    model = namespace["ModelNew"]()
    with pytest.raises(TypeError):
        model(torch.randn(5, 4), "not a number")
    assert namespace["_TAPE"] == [], "the recording ended with the call that failed"
    namespace["_TAPE"].append(namespace["_Recording"]())  # a call of another thread being recorded
    _check(model, memory, torch.randn(5, 4), 2.0)
    assert not any(model._plans.found.values())
    namespace["_TAPE"].clear()
    _check(model, memory, torch.randn(5, 4), 2.0)
    assert any(model._plans.found.values())


def test_an_output_the_forward_did_not_allocate_is_not_replayed() -> None:
    source = _SOLUTION.replace("return out.reshape(-1), total", "return out.reshape(-1), total + 0")
    namespace, memory = _solution(source)
    model = namespace["ModelNew"]()
    forwards = _counted(model)
    for _ in range(2):
        _check(model, memory, torch.randn(5, 4), 2.0)
    assert forwards[0] == 2 and list(model._plans.found.values()) == [False]


@pytest.mark.parametrize("change", [
    ("total = torch.empty(", "rows.sum().item()\n        total = torch.empty("),
    ("total = torch.empty(", "out.zero_()\n        total = torch.empty("),
    ("total = torch.empty(", "out[0] = 1\n        total = torch.empty("),
    ("total = torch.empty(", "torch.add(out, 1, out=out)\n        total = torch.empty("),
    ("def forward(self, x, k):", "def forward(self, x, k=1.0):"),
])
def test_a_forward_replay_cannot_make_safe_is_left_as_it_is(change: tuple[str, str]) -> None:
    helpers = template_environment("kforge", "data/engine/triton", trim_blocks=True).from_string(
        '{% import "_helpers.j2" as helpers %}{{ helpers.direct() }}').render()
    source = _SOLUTION.replace(*change).format(helpers=helpers)
    assert with_replay(source) == source


@pytest.mark.parametrize("name", ["reduce_full_sum_of_product", "net_mlp_classifier", "norm_layer_norm_module",
                                  "multiout_logits_and_softmax", "scan_cumsum_weighted",
                                  "move_concat_two_branches", "net_prenorm_transformer_block"])
def test_the_engines_triton_solutions_have_the_replay_and_load_without_a_gpu(name: str, tmp_path: Path) -> None:
    problem = load_problem(SUITE / f"{name}.py")
    found = propose(problem, "triton", limit=2)
    for index, variant in enumerate(found.variants):
        assert "self._plans = _Plans()" in variant.source and "_fresh(" in variant.source
        path = tmp_path / f"solution_{index}.py"  # Triton reads a kernel's source from its file
        path.write_text(variant.source)
        module = _module(path, f"solution_{name}_{index}")
        assert module._REPLAYABLE is torch.cuda.is_available()


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_batch_norms_evaluation_form_is_replayed_and_its_training_form_not(tmp_path: Path) -> None:
    """In training mode the forward writes the running statistics from Python (`copy_`), which replay would skip:
    that form runs its forward on every call; the evaluation form beside it keeps its replay (engine/modes.py)."""
    found = propose(load_problem(SUITE / "norm_batch_norm2d_train.py"), "triton", limit=1)
    source = found.variants[0].source
    training, evaluation = source.split("# ---- the forward for the reference's layers in evaluation mode ----")
    assert ".copy_(" in training and "self._plans" not in training
    assert "self._plans = _Plans_m1()" in evaluation and "_fresh_m1(" in evaluation
    path = tmp_path / "solution.py"
    path.write_text(source)
    assert _module(path, "solution_batch_norm_modes")._REPLAYABLE_m1 is torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["reduce_full_sum_of_product", "net_mlp_classifier", "multiout_row_range_normalize",
                                  "move_narrow_finite_difference",
                                  "scalar_float_alpha_blend",
                                  # the copies between kernels are kernels of their own (a cat, a reshape no view
                                  # does, a broadcast laid out, a scan's dim moved last), replayed like the rest
                                  "move_concat_two_branches", "net_prenorm_transformer_block",
                                  "reduce_argmin_nearest_code", "scan_cummax_drawdown"])
def test_replayed_calls_on_the_gpu_compute_what_the_forward_does(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.py"
    path.write_text(propose(load_problem(SUITE / f"{name}.py"), "triton", limit=1).variants[0].source)
    problem, solution = _module(SUITE / f"{name}.py", f"problem_{name}"), _module(path, f"replayed_{name}")
    assert solution._REPLAYABLE
    torch.manual_seed(0)
    reference = problem.Model(*problem.get_init_inputs()).cuda()
    model = solution.ModelNew(*problem.get_init_inputs()).cuda()
    model.reference.load_state_dict(reference.state_dict())

    def inputs() -> list[Any]:
        return [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]

    def listed(outputs: Any) -> list[torch.Tensor]:
        return list(outputs) if isinstance(outputs, tuple) else [outputs]

    with torch.no_grad():
        model(*inputs())  # recorded
        assert any(model._plans.found.values()), "the call was recorded for replay"
        for _ in range(2):
            fresh = inputs()
            replayed, direct = listed(model(*fresh)), listed(model._forward(*fresh))
            for got, want, expected in zip(replayed, direct, listed(reference(*fresh)), strict=True):
                assert torch.equal(got, want), "a replay computes bit for bit what the forward does"
                torch.testing.assert_close(got.float(), expected.float(), rtol=1e-3, atol=1e-3)
        again = listed(model(*fresh))
        assert {t.untyped_storage().data_ptr() for t in again}.isdisjoint(
            t.untyped_storage().data_ptr() for t in replayed), "each call's outputs are its own memory"
