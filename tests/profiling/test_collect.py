from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch.autograd.profiler_util import FunctionEvent

from kforge.paths import cache_dir
from kforge.platforms.cpu import CpuPlatform
from kforge.profiling import collect
from kforge.profiling.collect import MARKER, profile_callable
from kforge.profiling.schema import Profile

from .conftest import small_inputs


def test_cpu_profile_rows_cover_the_call(cpu_profile: Profile) -> None:
    assert cpu_profile.source == "torch.profiler"
    assert cpu_profile.platform == "cpu"
    assert cpu_profile.row_kind == "op"
    assert sum(row.share for row in cpu_profile.rows) == pytest.approx(1.0)
    assert cpu_profile.device_time_us_per_call > 0
    assert cpu_profile.wall_time_us_per_call is not None and cpu_profile.wall_time_us_per_call > 0
    names = {row.name for row in cpu_profile.rows}
    # Top-level operators only: addmm runs inside linear and is not a row of its own.
    assert {"aten::linear", "aten::relu", "aten::mul"} <= names
    assert "aten::addmm" not in names
    assert cpu_profile.launches_per_call == 3
    assert all(row.calls == cpu_profile.calls for row in cpu_profile.rows)


def test_calls_must_be_positive() -> None:
    with pytest.raises(ValueError):
        profile_callable(lambda inputs: None, small_inputs, CpuPlatform(), calls=0)


def _event(index: int, name: str, start: float, end: float, python: bool = False) -> FunctionEvent:
    return FunctionEvent(id=index, name=name, thread=0, start_us=start, end_us=end, is_python_function=python)


def _link(parent: FunctionEvent, *children: FunctionEvent) -> None:
    for child in children:
        parent.append_cpu_child(child)
        child.set_cpu_parent(parent)


def test_an_extension_call_is_one_row_and_python_frames_are_transparent(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = _event(1, MARKER, 0, 100)
    frame = _event(2, "solution.py(40): forward", 1, 99, python=True)
    extension = _event(3, "<built-in method fused_gelu of pybind11_builtins.pybind11_detail_function_record "
                          "object at 0x7f00>", 2, 80, python=True)
    inner = _event(4, "aten::empty_like", 3, 5)
    after = _event(5, "aten::add", 81, 98)
    torch_binding = _event(6, "<built-in method _get_tracing_state of pybind11_builtins.x object>", 99, 99.5,
                           python=True)
    _link(marker, frame)
    _link(frame, extension, after, torch_binding)
    _link(extension, inner)
    module = ModuleType("kforge_candidate_ext")
    module.__file__ = "/tmp/builds/kforge_candidate_ext/kforge_candidate_ext.so"
    module.fused_gelu = len  # any builtin stands in for the pybind11 function
    monkeypatch.setitem(sys.modules, module.__name__, module)

    totals = collect._host_totals([marker, frame, extension, inner, after, torch_binding])

    assert totals == {"kforge_candidate_ext::fused_gelu": (1, 78.0), "aten::add": (1, 17.0)}


def test_installed_native_modules_are_not_extensions() -> None:
    # torch._C is a native module inside site-packages: its bindings are torch's, not a candidate's.
    assert collect._extension_functions({"_get_tracing_state", "no_such_function"}) == {}


@pytest.mark.slow
def test_a_real_cpp_extension_shows_as_one_row() -> None:
    from torch.utils.cpp_extension import load_inline

    source = """
    #include <torch/extension.h>
    torch::Tensor twice(torch::Tensor x) {
        auto y = torch::empty_like(x);
        auto* in = x.data_ptr<float>();
        auto* out = y.data_ptr<float>();
        for (int64_t i = 0; i < x.numel(); ++i) out[i] = 2.0f * in[i];
        return y;
    }
    """
    build = cache_dir() / "test-builds" / "kforge_profiling_twice"
    build.mkdir(parents=True, exist_ok=True)
    extension = load_inline("kforge_profiling_twice", source, functions=["twice"], build_directory=str(build))
    assert Path(extension.__file__).exists()
    with torch.no_grad():
        profile = profile_callable(lambda inputs: torch.relu(extension.twice(*inputs)), small_inputs, CpuPlatform(),
                                   calls=2, warmup=1)
    names = {row.name for row in profile.rows}
    assert names == {"kforge_profiling_twice::twice", "aten::relu"}
