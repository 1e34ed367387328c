"""The generated Triton forward's two paths: the fast one for contiguous operands of the expected shapes, the
general one for anything else. Each problem below has input sets that take each path; the harness judges the
default variant on all of them (Triton's CPU interpreter), and a recorder standing in for the kernels shows
which path each input set took.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch

from kforge.engine.ir import Node, Program, TensorSpec
from kforge.engine.propose import propose
from kforge.engine.triton.fast import param_root, prelude_split, tiling
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

GATE = HEADER + '''class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)

    def forward(self, x, y):
        return torch.tanh(x * self.scale.view(1, -1, 1)) + y


def get_inputs():
    return [torch.randn(2, 6, 40), torch.randn(2, 6, 40)]


def get_input_variants():
    return [
        [torch.randn(3, 6, 33), torch.randn(3, 6, 33)],
        [torch.randn(2, 6, 40), torch.randn(40)],
        [torch.randn(2, 40, 6).transpose(1, 2), torch.randn(2, 6, 40)],
        [torch.randn(2, 1, 40), torch.randn(2, 6, 40)],
    ]


def get_init_inputs():
    return [6]
'''
GATE_PATHS = ["fast", "fast", "general", "general", "general"]

SOFTMAX = HEADER + '''class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(width) + 0.5)

    def forward(self, x, y):
        return torch.softmax(x * self.scale + y, dim=-1)


def get_inputs():
    return [torch.randn(5, 30), torch.randn(5, 30)]


def get_input_variants():
    return [
        [torch.randn(3, 7, 30), torch.randn(3, 7, 30)],
        [torch.randn(5, 30), torch.randn(30)],
        [torch.randn(30, 5).t(), torch.randn(5, 30)],
    ]


def get_init_inputs():
    return [30]
'''
SOFTMAX_PATHS = ["fast", "fast", "general", "general"]

LINEAR = HEADER + '''IN, OUT = 20, 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(IN, OUT)
        self.gain = nn.Parameter(torch.rand(OUT) + 0.5)

    def forward(self, x):
        return F.relu(self.linear(x)) * self.gain


def get_inputs():
    return [torch.randn(10, IN)]


def get_input_variants():
    return [[torch.randn(3, 5, IN)], [torch.randn(IN, 7).t()]]


def get_init_inputs():
    return []
'''


def _default_variant(tmp_path: Path, name: str, problem: str) -> tuple[Path, str]:
    path = tmp_path / f"{name}.py"
    path.write_text(problem)
    proposal = propose(load_problem(path), "triton", limit=1)
    return path, proposal.variants[0].source


def _judge(problem: Path, source: str, platform: str = "cpu") -> None:
    solution = problem.with_name(problem.stem + "_solution.py")
    solution.write_text(source)
    verdict = evaluate(problem, solution, fast_options(platform=platform, language="triton", trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


class _Recorder:
    """Stands in for a JIT kernel: remembers that it was launched."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def __getitem__(self, grid: Any) -> _Recorder:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.log.append(self.name)


def _import(tmp_path: Path, source: str, name: str) -> Any:
    """The engine's own output imported here (it is not a candidate), its kernels not yet replaced."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _paths(tmp_path: Path, problem: Path, source: str, general: str) -> list[str]:
    """For each input set of `problem`: 'general' when the forward used `general` (a kernel or a helper), else
    'fast'. The kernels are replaced by recorders: nothing is launched."""
    import triton

    module = _import(tmp_path, source, f"{problem.stem}_recorded")
    log: list[str] = []
    for name, value in list(vars(module).items()):
        if isinstance(value, triton.runtime.JITFunction):
            setattr(module, name, _Recorder(name, log))
        elif name == general:
            setattr(module, name, lambda *args, value=value: (log.append(general), value(*args))[1])
    loaded = load_problem(problem)
    model = module.ModelNew(*loaded.init_inputs())
    taken = []
    for inputs in loaded.input_sets(0):
        log.clear()
        model(*inputs)
        taken.append("general" if general in log else "fast")
    return taken


def test_pointwise_fast_path_and_general_path(tmp_path: Path) -> None:
    problem, source = _default_variant(tmp_path, "gate", GATE)
    assert "def _fused(" in source and "def _fused_strided(" in source
    # The parameter is passed as it is and indexed by its channel; no reshape of it on the fast path.
    fast = source[source.index("def forward"):source.index("_fused[grid](")]
    launch = source[source.index("_fused[grid]("):source.index("_fused_strided[grid](")]
    assert ".reshape(" not in fast and "p_scale, " in launch and "% 6" in source
    assert _paths(tmp_path, problem, source, "_fused_strided") == GATE_PATHS
    _judge(problem, source)


def test_rows_fast_path_and_general_path(tmp_path: Path) -> None:
    problem, source = _default_variant(tmp_path, "softmax", SOFTMAX)
    assert "if in_x.is_contiguous() and in_y.shape == in_x.shape" in source
    assert _paths(tmp_path, problem, source, "_dense") == SOFTMAX_PATHS
    _judge(problem, source)


@pytest.mark.parametrize(("k", "n", "masked"), [(20, 24, True), (64, 64, False)])
def test_a_product_by_a_parameter_gets_the_fixed_gemm(tmp_path: Path, k: int, n: int, masked: bool) -> None:
    problem, source = _default_variant(tmp_path, "linear", LINEAR.replace("IN, OUT = 20, 24", f"IN, OUT = {k}, {n}"))
    assert f"N: tl.constexpr = {n}, K: tl.constexpr = {k}" in source and "stride_am" not in source
    assert "p_linear_weight, p_linear_bias, p_gain, out, M," in source
    # Masks on N and K only where the tiles do not divide them.
    assert ("b = tl.load(w_ptrs)" not in source) == masked and ("mask=rn < N" in source) == masked
    _judge(problem, source)  # a non-contiguous input is made contiguous first


def test_the_held_parameters_follow_the_module_when_it_moves(tmp_path: Path) -> None:
    _, source = _default_variant(tmp_path, "linear", LINEAR)
    model = _import(tmp_path, source, "linear_held").ModelNew()
    reference = model.reference
    model.to(torch.float64)  # as the harness's .to(device): parameters keep their identity, their data moves
    assert [held is now for held, now in zip(model.params, (reference.linear.weight, reference.linear.bias,
                                                             reference.gain), strict=True)] == [True] * 3
    assert {held.dtype for held in model.params} == {torch.float64}


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "text"), [("gate", GATE), ("softmax", SOFTMAX), ("linear", LINEAR)])
def test_both_paths_compile_and_are_correct_on_the_gpu(tmp_path: Path, name: str, text: str) -> None:
    # The interpreter checks the arithmetic; only the GPU compiles the kernels (constexpr defaults, masks).
    problem, source = _default_variant(tmp_path, name, text)
    _judge(problem, source, platform="cuda")


# ---- the render-time pieces ------------------------------------------------------------------------------------
def test_a_per_channel_parameter_is_indexed_by_its_channel() -> None:
    layout = tiling((8, 64, 1024), [(1, 64, 1)])
    assert layout is not None and layout.split == 2 and layout.varying == [1] and not layout.spans
    assert layout.cols("x") == "x.shape[2]"
    assert layout.load("p", "v", (1, 64, 1)) == \
        "v = tl.load(p + row % 64, mask=row < rows, other=0.0).to(tl.float32)[:, None]"
    image = tiling((8, 32, 17, 29), [(1, 32, 1, 1)])  # a conv2d's per-channel scale: cols are H * W
    assert image is not None and image.cols("x") == "x.shape[2] * x.shape[3]"


def test_a_parameter_along_the_last_dim_is_indexed_by_column() -> None:
    layout = tiling((5, 7, 30), [(30,), ()])
    assert layout is not None and layout.split == 2
    assert layout.load("p", "v", (30,)) == "v = tl.load(p + col, mask=col < cols, other=0.0).to(tl.float32)[None, :]"
    assert layout.load("p", "v", ()) == "v = tl.load(p).to(tl.float32)"


def test_parameters_along_several_dims_read_runtime_spans() -> None:
    layout = tiling((2, 3, 4, 5), [(3, 1, 1), (3, 1, 5)])
    assert layout is not None and layout.split == 3 and layout.varying == [1, 3]
    assert layout.spans == [("span2", 2, 3)] and layout.span_values("x") == ["x.shape[2]"]
    assert layout.load("p", "v", (3, 1, 5)) == \
        "v = tl.load(p + (((row // span2) % 3) * 5)[:, None] + col[None, :], mask=mask, other=0.0).to(tl.float32)"
    assert tiling((), []) is None and tiling((4,), [(2, 4)]) is None


def test_the_fast_path_keeps_only_the_prelude_it_needs() -> None:
    prelude = ["s_n = float(in_x.shape[1])", "t_view = self.reference.scale.reshape((1, 6, 1))",
               "s_log = math.log(s_n)", "t_other = t_view.reshape((6,))"]
    needed, rest = prelude_split(prelude, ["in_x", "s_log"])
    assert needed == ["s_n = float(in_x.shape[1])", "s_log = math.log(s_n)"]
    assert rest == ["t_view = self.reference.scale.reshape((1, 6, 1))", "t_other = t_view.reshape((6,))"]


def test_param_root_follows_reshapes_only() -> None:
    program = Program(
        inputs=(TensorSpec("x", (2, 6)),), params=(TensorSpec("w", (6,)),),
        nodes=(Node("v", "view", ("w",), (1, 6), attrs=(("shape", (1, 6)),)),
               Node("s", "slice", ("w",), (3,), attrs=(("dim", 0), ("start", 0), ("step", 1), ("stop", 3))),
               Node("out", "add", ("x", "v"), (2, 6))),
        outputs=("out",))
    assert [param_root(program, name) for name in ("w", "v", "s", "x", "out")] == ["w", "w", None, None, None]

