"""The static policy on the new languages' sources: the C++ rules reach HIP and SYCL strings, and Metal comes
as source only (a precompiled library is refused)."""

from __future__ import annotations

import pytest

from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source

HEAD = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"


def rules(source: str) -> set[str]:
    return {violation.rule for violation in check_source(HEAD + source, Policy())}


@pytest.mark.parametrize("spelling", [
    "lib = torch.mps.load_metallib(b'MTLB')\n",
    "from torch.mps import load_metallib\n",
    "from torch import mps\nlib = mps.load_metallib('kernels.metallib')\n",
])
def test_a_precompiled_metal_library_is_refused(spelling: str) -> None:
    assert rules(spelling) == {"static.introspection"}


def test_metal_source_compiled_at_run_time_is_accepted() -> None:
    kernel = "kernel void f(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1.0f; }"
    assert rules(f"lib = torch.mps.compile_shader({kernel!r})\n") == set()


@pytest.mark.parametrize(("native", "rule"), [
    ('#include <hip/hip_runtime.h>\nint f() { return system("rm -rf /tmp/x"); }', "static.cpp-process"),
    ('#include <sycl/sycl.hpp>\nconst char* home() { return getenv("HOME"); }', "static.cpp-io"),
    ('#include <metal_stdlib>\n// a Metal string is scanned like any other\nint f() { return fork(); }',
     "static.cpp-process"),
])
def test_the_cpp_rules_reach_every_native_language(native: str, rule: str) -> None:
    assert rule in rules(f"SOURCE = r'''{native}'''\n")
