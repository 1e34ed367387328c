from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from kforge.paths import cache_dir
from kforge.platforms.cpu import CpuPlatform
from kforge.profiling import collect
from kforge.profiling.collect import MARKER, profile_callable
from kforge.profiling.extensions import labelled_extension_calls, runtime_extensions
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


def _event(index: int, name: str, start: float, end: float) -> FunctionEvent:
    return FunctionEvent(id=index, name=name, thread=0, start_us=start, end_us=end)


@pytest.fixture
def fake_extension(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    """A module that looks like a load_inline build: a native file outside site-packages, builtin functions."""
    module = ModuleType("kforge_fake_ext")
    module.__file__ = str(tmp_path / "kforge_fake_ext.so")
    module.double_relu = torch.relu  # a builtin function, as a pybind11 function is
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_an_extension_call_is_one_row(fake_extension: ModuleType) -> None:
    original = fake_extension.double_relu
    with torch.no_grad():
        profile = profile_callable(lambda inputs: fake_extension.double_relu(*inputs) + 1, small_inputs,
                                   CpuPlatform(), calls=2, warmup=0)
    # aten::relu runs inside the extension's call and is part of its row, not a row of its own.
    assert {row.name for row in profile.rows} == {"kforge_fake_ext::double_relu", "aten::add"}
    assert fake_extension.double_relu is original


def test_only_run_time_built_modules_count_as_extensions(fake_extension: ModuleType) -> None:
    found = runtime_extensions()
    assert fake_extension in found
    assert torch._C not in found  # torch's own bindings live in site-packages
    with labelled_extension_calls() as labels:
        assert "kforge_fake_ext::double_relu" in labels
        assert fake_extension.double_relu is not torch.relu
    assert fake_extension.double_relu is torch.relu


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


def test_device_rows_are_the_device_events_inside_the_markers() -> None:
    first = _event(1, MARKER, 100, 200)
    second = _event(2, MARKER, 300, 400)
    kernels = [_event(3, "gemm", 110, 150), _event(4, "gemm", 310, 352), _event(5, "triton_add", 360, 365),
               _event(6, "fill_inputs", 250, 260), _event(7, MARKER, 105, 195)]
    for kernel in kernels:
        kernel.device_type = DeviceType.CUDA

    totals = collect._device_totals([first, second, *kernels])

    # fill_inputs ran between the calls (making inputs); the marker's own device annotation is no kernel.
    assert totals == {"gemm": (2, 82.0), "triton_add": (1, 5.0)}
