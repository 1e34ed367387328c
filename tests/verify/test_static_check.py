"""The static policy on small sources: what it flags, and the honest patterns it leaves alone."""

from __future__ import annotations

import textwrap

import pytest

from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source

MATMUL_REFERENCE = {"aten::mm", "aten::relu"}

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def rules(body: str, reference_ops: set[str] | None = None, policy: Policy | None = None) -> set[str]:
    source = HEADER + textwrap.dedent(body)
    return {v.rule for v in check_source(source, policy or Policy(), reference_ops or MATMUL_REFERENCE)}


@pytest.mark.parametrize(("body", "rule"), [
    ("y = torch.matmul(a, b)", "static.framework-compute"),
    ("y = a @ b", "static.framework-compute"),
    ("y = F.relu(a)", "static.framework-compute"),
    ("y = a.mm(b)", "static.framework-compute"),
    ("from torch import matmul\ny = matmul(a, b)", "static.framework-compute"),
    ("y = torch.ops.aten.mm(a, b)", "static.framework-compute"),
    ("y = getattr(torch, 'mat' + 'mul')(a, b)", "static.dynamic-name"),
    ("y = eval('torch.mm(a, b)')", "static.dynamic-name"),
    ("m = __import__('torch')", "static.dynamic-name"),
    ("try:\n    y = 1\nexcept Exception:\n    y = 2", "static.try-except"),
    ("import threading", "static.concurrency"),
    ("from concurrent.futures import ThreadPoolExecutor", "static.concurrency"),
    ("import subprocess", "static.concurrency"),
    ("import os\nos.system('ls')", "static.concurrency"),
    ("import os\nkey = os.environ['OPENAI_API_KEY']", "static.io"),
    ("import os\nkey = os.getenv('HOME')", "static.io"),
    ("import os\nos._exit(0)", "static.process"),
    ("f = open('/etc/passwd')", "static.io"),
    ("import socket", "static.io"),
    ("import time\ntime.perf_counter = lambda: 0", "static.import"),
    ("torch.allclose = lambda *a, **k: True", "static.monkeypatch"),
    ("torch.Tensor.__eq__ = lambda a, b: True", "static.monkeypatch"),
    ("setattr(torch, 'allclose', None)", "static.monkeypatch"),
    ("g = torch.compile(f)", "static.compiler"),
    ("import torch._dynamo", "static.compiler"),
    ("s = torch.jit.script(f)", "static.compiler"),
    ("torch._C._set_grad_enabled(False)", "static.introspection"),
    ("import gc", "static.introspection"),
    ("import ctypes", "static.introspection"),
    ("import sys\nm = sys.modules['time']", "static.introspection"),
    ("import numpy", "static.foreign-framework"),
    ("import requests", "static.io"),
    ("SRC = '''int f() { const char* k = getenv(\"OPENAI_API_KEY\"); return k != 0; }'''", "static.cpp-io"),
    ("SRC = '''void f() { system(\"curl example\"); } // a long enough C++ source string'''", "static.cpp-process"),
    ("SRC = '''#include <thread>\nvoid f() { std::thread t([]{}); t.detach(); }'''", "static.cpp-concurrency"),
    ("SRC = '''#include <fcntl.h>\nint f() { return open(\"/proc/self/maps\", O_RDONLY); } // memory map'''",
     "static.cpp-io"),
    ("SRC = '''torch::Tensor f(torch::Tensor x) { auto frame = PyEval_GetFrame(); return x; } // the caller'''",
     "static.cpp-introspection"),
    ("SRC = '''torch::Tensor f(torch::Tensor x) { auto m = py::module_::import(\"gc\"); return x; } // a module'''",
     "static.cpp-introspection"),
])
def test_flags(body: str, rule: str) -> None:
    assert rule in rules(body)


LAYER_CALL = """
    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
"""


def test_layer_call_is_flagged_but_reading_its_weights_is_not() -> None:
    assert rules(LAYER_CALL, {"aten::addmm"}) == {"static.layer-call"}
    reads = LAYER_CALL.replace("return self.fc(x)", "return ext.fused(x, self.fc.weight, self.fc.bias)")
    assert rules(reads, {"aten::addmm"}) == set()


def test_honest_extension_pattern_passes() -> None:
    body = """
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="k", cpp_sources="torch::Tensor relu_mm(torch::Tensor a, torch::Tensor b);",
                      functions=["relu_mm"], extra_cflags=["-O3"])

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.ext = ext
            self.weight = nn.Parameter(torch.randn(4, 4))

        def forward(self, x):
            x = x.contiguous().view(-1, 4)
            out = torch.empty(x.shape[0], 4, device=x.device, dtype=x.dtype)
            self.ext.relu_mm(x, self.weight)
            return ext.relu_mm(x, self.weight.t().contiguous())
    """
    assert rules(body) == set()


def test_compute_the_reference_does_not_use_is_left_to_the_dynamic_check() -> None:
    assert rules("y = a.exp()", {"aten::mm"}) == set()
    assert rules("y = a.exp()", {"aten::exp"}) == {"static.framework-compute"}


def test_policy_can_allow_an_import_or_turn_static_checks_off() -> None:
    assert rules("import numpy", policy=Policy(allow_imports=frozenset({"numpy"}))) == set()
    assert rules("import threading", policy=Policy(static_checks=False)) == set()


def test_violation_message_names_the_line() -> None:
    violations = check_source(HEADER + "\n\ny = torch.matmul(a, b)\n", Policy(), MATMUL_REFERENCE)
    assert "line 6" in violations[0].message


VENDOR = Policy().allowing_vendor_gemm()
LINEAR_REFERENCE = {"aten::addmm", "aten::gelu", "aten::convolution"}


@pytest.mark.parametrize("body", [
    "y = F.linear(x, w, b)",
    "y = torch.mm(a, b)",
    "y = torch.matmul(a, b)",
    "y = a @ b",
    "y = a.matmul(b)",
    "y = torch.addmm(b, a, w)",
    "y = F.conv1d(x, w, padding=1)",
    "y = F.conv2d(x, w, b, stride=2)",
    "from torch.nn.functional import linear\ny = linear(x, w)",
    "y = torch.ops.aten.mm(a, b)",
])
def test_vendor_gemm_policy_lets_the_gemm_and_convolution_calls_through(body: str) -> None:
    assert "static.framework-compute" in rules(body, LINEAR_REFERENCE)
    assert rules(body, LINEAR_REFERENCE, VENDOR) == set()


@pytest.mark.parametrize("body", [
    "y = F.gelu(x)",  # the epilogue is still the candidate's work
    "y = torch.einsum('ij,jk->ik', a, b)",  # reaches aten::einsum, which the vendor policy does not allow
    "y = torch.ops.prims.mul(a, b)",
    "y = F.softmax(F.linear(x, w), dim=-1)",
])
def test_vendor_gemm_policy_still_flags_everything_else(body: str) -> None:
    reference = LINEAR_REFERENCE | {"aten::mm", "aten::softmax", "aten::mul"}
    assert "static.framework-compute" in rules(body, reference, VENDOR)


def test_vendor_gemm_policy_keeps_the_other_rules() -> None:
    assert rules(LAYER_CALL, LINEAR_REFERENCE, VENDOR) == {"static.layer-call"}
    assert rules("g = torch.compile(F.linear)", LINEAR_REFERENCE, VENDOR) == {"static.compiler"}


def test_one_allowed_operator_lets_its_own_spellings_through_only() -> None:
    relu = Policy(allow_ops=frozenset({"aten::relu"}))
    assert rules("y = F.relu(a)", policy=relu) == set()
    assert rules("y = a.relu()", policy=relu) == set()
    assert rules("y = torch.mm(a, b)", policy=relu) == {"static.framework-compute"}
