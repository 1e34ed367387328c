"""The Triton backend: each template kind, lowered from a hand-written IR program, judged by the real harness.

The programs below are what capture makes of the small problems in tests/problems/engine (checked here
against the references with the IR's own interpreter); their generated solutions run in Triton's CPU
interpreter through `kforge.verify.evaluate`, on every input variant (odd sizes, other ranks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError
from kforge.engine.ir import Node, Program, TensorSpec, make_attrs
from kforge.engine.propose import propose
from kforge.engine.triton import Unsupported, variants
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options, kernel_count

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

FOLDER = PROBLEMS / "engine"


def _n(name: str, op: str, args: tuple, result: tuple, **attrs: object) -> Node:
    return Node(name, op, args, result, attrs=make_attrs(**attrs))


def _x(shape: tuple, dynamic: tuple[bool, ...]) -> TensorSpec:
    return TensorSpec("x", shape, static=tuple(not d for d in dynamic))


def _unary_zoo() -> Program:
    """The IR of tests/problems/engine/unary_zoo.py, its sums in the reference's (left to right) order."""
    nodes: list[Node] = []

    def node(op: str, *args: object, **attrs: object) -> str:
        nodes.append(_n(f"t{len(nodes)}", op, args, (6, 30), **attrs))
        return nodes[-1].name

    def total(terms: list[str]) -> str:
        result = terms[0]
        for term in terms[1:]:
            result = node("add", result, term)
        return result

    signed = total([
        node("neg", "x"), node("abs", "x"), node("exp", node("mul", "x", 0.5)), node("sin", "x"), node("cos", "x"),
        node("erf", "x"), node("sigmoid", "x"), node("tanh", "x"), node("relu", "x"), node("gelu", "x"),
        node("gelu_tanh", "x"), node("silu", "x"), node("mish", "x"), node("softplus", "x", beta=2.0, threshold=5.0),
        node("leaky_relu", "x", negative_slope=0.2), node("elu", "x", alpha=0.7), node("hardsigmoid", "x"),
        node("hardswish", "x"), node("clamp", "x", min=-0.5, max=0.75), node("expm1", node("mul", "x", 0.1)),
        node("mul", "x", "x"), node("maximum", "x", node("mul", "y", 0.5)), node("minimum", "x", node("neg", "y")),
    ])
    positive = total([
        node("log", "y"), node("log1p", "y"), node("sqrt", "y"), node("rsqrt", "y"), node("reciprocal", "y"),
        node("pow", "y", 1.7), node("mul", node("pow", "x", 3.0), 0.1), node("pow", "y", 0.5),
        node("div", "y", node("add", node("mul", "x", "x"), 1.0)),
    ])
    out = node("add", signed, positive)
    spec = [TensorSpec(name, (6, 30), static=(False, False)) for name in ("x", "y")]
    return Program(inputs=tuple(spec), params=(), nodes=tuple(nodes), outputs=(out,))


PROGRAMS: dict[str, Program] = {
    "unary_zoo": _unary_zoo(),
    "channel_gate": Program(
        inputs=(_x((2, 6, 40), (True, False, True)),),
        params=(TensorSpec("scale", (6,)), TensorSpec("shift", (6,))),
        nodes=(_n("scale_v", "view", ("scale",), (1, 6, 1), shape=(1, 6, 1)),
               _n("shift_v", "view", ("shift",), (1, 6, 1), shape=(1, 6, 1)),
               _n("m", "mul", ("x", "scale_v"), (2, 6, 40)), _n("g", "sigmoid", ("m",), (2, 6, 40)),
               _n("p", "mul", ("x", "g"), (2, 6, 40)), _n("out", "add", ("p", "shift_v"), (2, 6, 40))),
        outputs=("out",)),
    "scaled_softmax": Program(
        inputs=(_x((12, 50), (True, True)),), params=(),
        nodes=(_n("s", "mul", ("x", 1.5), (12, 50)), _n("out", "softmax", ("s",), (12, 50), dim=1)),
        outputs=("out",)),
    "seq_logmeanexp": Program(
        inputs=(_x((3, 20, 24), (True, True, True)),), params=(),
        nodes=(_n("n", "size", ("x",), (), dim=1), _n("logn", "log", ("n",), ()),
               _n("b", "mul", (2.0, "x"), (3, 20, 24)),
               _n("lse", "logsumexp", ("b",), (3, 24), dim=1, keepdim=False),
               _n("c", "sub", ("lse", "logn"), (3, 24)), _n("out", "div", ("c", 2.0), (3, 24))),
        outputs=("out",)),
    "norm_relu": Program(
        inputs=(_x((10, 200), (True, False)),),
        params=(TensorSpec("weight", (200,)), TensorSpec("bias", (200,))),
        nodes=(_n("ln", "layer_norm", ("x", "weight", "bias"), (10, 200), dim=1, eps=1e-5),
               _n("r", "relu", ("ln",), (10, 200)), _n("out", "sub", ("r", 0.25), (10, 200))),
        outputs=("out",)),
    "linear_gelu": Program(
        inputs=(_x((20, 40), (True, False)),),
        params=(TensorSpec("linear.weight", (24, 40)), TensorSpec("linear.bias", (24,))),
        heavy=_n("h", "linear", ("x", "linear.weight", "linear.bias"), (20, 24)),
        nodes=(_n("g", "gelu_tanh", ("h",), (20, 24)), _n("out", "mul", ("g", 0.5), (20, 24))),
        outputs=("out",)),
    "batched_scores": Program(
        inputs=(TensorSpec("a", (3, 9, 20), static=(False, False, False)),
                TensorSpec("b", (3, 20, 17), static=(False, False, True))),
        params=(TensorSpec("bias", (17,)),),
        heavy=_n("s", "bmm", ("a", "b"), (3, 9, 17)),
        nodes=(_n("m", "mul", ("s", 0.125), (3, 9, 17)), _n("t", "tanh", ("m",), (3, 9, 17)),
               _n("out", "add", ("t", "bias"), (3, 9, 17))),
        outputs=("out",)),
    "projection_relu": Program(
        inputs=(_x((2, 5, 12), (True, True, False)),), params=(TensorSpec("weight", (12, 20)),),
        heavy=_n("p", "matmul", ("x", "weight"), (2, 5, 20)),
        nodes=(_n("out", "relu", ("p",), (2, 5, 20)),), outputs=("out",)),
    "linear_softmax": Program(
        inputs=(_x((14, 24), (True, False)),),
        params=(TensorSpec("linear.weight", (300, 24)), TensorSpec("linear.bias", (300,))),
        heavy=_n("h", "linear", ("x", "linear.weight", "linear.bias"), (14, 300)),
        nodes=(_n("d", "mul", ("h", 2.0), (14, 300)), _n("out", "softmax", ("d",), (14, 300), dim=1)),
        outputs=("out",)),
    # Not held by the convolution's store (a broadcast parameter): the convolution, then a fused kernel.
    "strided_conv_scale": Program(
        inputs=(_x((2, 5, 30), (True, False, True)),),
        params=(TensorSpec("conv.weight", (5, 1, 3)), TensorSpec("scale", (5,))),
        heavy=_n("c", "conv1d", ("x", "conv.weight"), (2, 5, 15), stride=(2,), padding=(2,), dilation=(2,),
                 groups=5),
        nodes=(_n("s", "view", ("scale",), (1, 5, 1), shape=(1, 5, 1)), _n("out", "mul", ("c", "s"), (2, 5, 15))),
        outputs=("out",)),
    # As simplification leaves it: the weights summed over their rows (prepared), a GEMV, a unit dim dropped.
    "linear_row_sum": Program(
        inputs=(_x((12, 40), (True, False)),),
        params=(TensorSpec("linear.weight", (50, 40)), TensorSpec("linear.bias", (50,))),
        prepared=(_n("w_rows", "sum", ("linear.weight",), (1, 40), dim=0, keepdim=True),
                  _n("b_sum", "sum", ("linear.bias",), (1,), dim=0, keepdim=True)),
        heavy=_n("h", "linear", ("x", "w_rows", "b_sum"), (12, 1)),
        nodes=(_n("out", "view", ("h",), (12,), shape=(12,)),), outputs=("out",)),
    "causal_conv_silu": Program(
        inputs=(_x((2, 5, 30), (True, False, True)),),
        params=(TensorSpec("conv.weight", (5, 1, 4)), TensorSpec("conv.bias", (5,))),
        heavy=_n("c", "conv1d", ("x", "conv.weight", "conv.bias"), (2, 5, 33), stride=(1,), padding=(3,),
                 dilation=(1,), groups=5),
        nodes=(_n("n", "size", ("x",), (), dim=2),
               _n("causal", "slice", ("c", "n"), (2, 5, 30), dim=2, start=0, stop=None, step=1),
               _n("out", "silu", ("causal",), (2, 5, 30))),
        outputs=("out",)),
}


def _source(name: str) -> str:
    return (FOLDER / f"{name}.py").read_text()


def _judge(tmp_path: Path, name: str, source: str, policy: Policy | None = None) -> None:
    path = tmp_path / f"{name}_solution.py"
    path.write_text(source)
    options = fast_options(language="triton", trials=1, **({"policy": policy} if policy else {}))
    verdict = evaluate(FOLDER / f"{name}.py", path, options)
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_compute_what_their_references_compute(name: str) -> None:
    problem = load_problem(FOLDER / f"{name}.py")
    model = problem.make_model(0)
    params = dict(model.named_parameters())
    for inputs in problem.input_sets(0)[:1]:
        [got] = ir.evaluate(PROGRAMS[name], inputs, params)
        torch.testing.assert_close(got, model(*inputs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_default_variant_is_correct_in_the_interpreter(tmp_path: Path, name: str) -> None:
    [(_config, source), *_] = variants(PROGRAMS[name], _source(name))
    assert "ModelNew" in source and "@triton.jit" in source
    _judge(tmp_path, name, source)


def _variant(name: str, **wanted: object) -> str:
    """The source of the first variant whose configuration has the `wanted` values."""
    for config, source in variants(PROGRAMS[name], _source(name), vendor_gemm=True):
        if all(config.get(key) == value for key, value in wanted.items()):
            return source
    raise AssertionError(f"no variant of {name} with {wanted}")


@pytest.mark.parametrize(("name", "wanted"), [
    ("scaled_softmax", {"BLOCK_R": 128}),  # rows of 301 walked in blocks: the multi-pass path
    ("seq_logmeanexp", {"BLOCK_R": 128}),
    ("norm_relu", {"BLOCK_R": 128}),  # layer norm's three passes
    ("linear_gelu", {"precision": "tf32x3", "BLOCK_M": 16, "BLOCK_N": 32}),  # masks on N and K
    ("channel_gate", {"BLOCK_COLS": 128}),
])
def test_other_configurations_are_correct_too(tmp_path: Path, name: str, wanted: dict[str, object]) -> None:
    _judge(tmp_path, name, _variant(name, **wanted))


def test_vendor_gemm_variant_is_the_vendor_call_and_a_fused_kernel(tmp_path: Path) -> None:
    source = _variant("linear_gelu", vendor=True)
    assert "F.linear(" in source and "tl.dot" not in source
    # One fused kernel, in two forms: the fast path's and the general (strided) one.
    assert kernel_count(source) == 2 and "def _fused(" in source and "def _fused_strided(" in source
    _judge(tmp_path, "linear_gelu", source, Policy().allowing_vendor_gemm())


def test_vendor_variants_are_offered_only_when_allowed() -> None:
    configs = [config for config, _ in variants(PROGRAMS["linear_gelu"], _source("linear_gelu"))]
    assert configs and not any(config.get("vendor") for config in configs)
    assert configs[0]["precision"] == "ieee", "float32 keeps full precision in the default variant"


def test_two_reductions_are_refused_in_one_line() -> None:
    program = Program(
        inputs=(_x((4, 8), (True, False)),), params=(),
        nodes=(_n("a", "amax", ("x",), (4,), dim=1), _n("b", "sum", ("x",), (4,), dim=1),
               _n("out", "add", ("a", "b"), (4,))),
        outputs=("out",))
    with pytest.raises(Unsupported, match="at most one reduction"):
        variants(program, "")


def test_a_reduction_after_a_gemm_runs_in_its_own_fused_kernel() -> None:
    found = variants(PROGRAMS["linear_softmax"], _source("linear_softmax"))
    assert all("_gemm_kernel" in source and "tl.dot" in source and "F.linear" not in source for _, source in found)
    assert all(kernel_count(source) == 2 for _, source in found)


def test_an_epilogue_that_broadcasts_the_product_gets_its_own_kernel(tmp_path: Path) -> None:
    # relu(fc(x) + y) with y of (3, M, N): the GEMM's tiles hold M x N, the output 3 x M x N, so the epilogue
    # cannot ride on the accumulator's one store; the bare GEMM is followed by a fused kernel.
    found = propose(load_problem(FOLDER / "linear_broadcast_add.py"), "triton", limit=2).variants
    for variant in found:
        assert "_gemm_kernel" in variant.source and kernel_count(variant.source) == 2
        _judge(tmp_path, "linear_broadcast_add", variant.source)


@pytest.mark.parametrize("name", ["masked_linear", "masked_softmax", "mask_logic"])
def test_comparisons_and_where_are_fused(tmp_path: Path, name: str) -> None:
    # Masks held as 1.0/0.0 in the kernel: multiplied, cast, and selecting (a where of -inf before a softmax).
    found = propose(load_problem(FOLDER / f"{name}.py"), "triton", limit=2).variants
    for variant in found:
        assert "tl.where(" in variant.source and "torch.where" not in variant.source
        _judge(tmp_path, name, variant.source)


NOT_A_MASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.logical_and(x, x > 0).float() * x


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
"""


def test_logical_ops_take_masks_only(tmp_path: Path) -> None:
    # logical_and of a float tensor tests it against zero: the kernels' product of 1.0/0.0 masks would not.
    path = tmp_path / "not_a_mask.py"
    path.write_text(NOT_A_MASK)
    with pytest.raises(LoweringError, match=r"logical_and \(of values that are not masks\)"):
        propose(load_problem(path), "triton", limit=1)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["masked_linear", "masked_softmax", "mask_logic"])
def test_comparisons_and_where_compile_and_run_on_the_gpu(tmp_path: Path, name: str, pool: WorkerPool) -> None:
    # The interpreter does not type-check masks; the GPU compiler does (i1 against fp32 in tl.where).
    found = propose(load_problem(FOLDER / f"{name}.py"), "triton", limit=2).variants
    for index, variant in enumerate(found):
        path = tmp_path / f"{name}_{index}.py"
        path.write_text(variant.source)
        verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(platform="cuda", language="triton", trials=1),
                           pool=pool)
        assert verdict.verdict == Outcome.CORRECT, f"{variant.config}: {verdict.reason}"


def test_prepared_values_are_computed_by_their_own_kernels_each_call() -> None:
    [(_config, source)] = variants(PROGRAMS["linear_row_sum"], _source("linear_row_sum"), limit=1)
    assert "_prepare0(p_linear_weight)" in source and "_prepare1(p_linear_bias)" in source
    assert source.rstrip().endswith("return out.reshape(out_shape).squeeze(-1)")


def test_a_convolution_by_a_weight_that_is_no_parameter_needs_the_vendor_policy() -> None:
    # (A convolution by a parameter is generated: tests/engine/test_triton_conv.py.)
    program = Program(
        inputs=(_x((2, 3, 16), (True, False, True)), TensorSpec("w", (4, 3, 3))), params=(),
        heavy=_n("c", "conv1d", ("x", "w"), (2, 4, 14), stride=(1,), padding=(0,), dilation=(1,), groups=1),
        nodes=(_n("out", "relu", ("c",), (2, 4, 14)),), outputs=("out",))
    with pytest.raises(Unsupported, match=r"not a parameter.*--allow-vendor-gemm"):
        variants(program, "")
    [(config, source)] = variants(program, "", vendor_gemm=True, limit=1)
    assert config["vendor"] is True and "F.conv1d(in_x, in_w, stride=(1,)" in source


def test_a_depthwise_convolution_is_generated_without_the_vendor() -> None:
    found = variants(PROGRAMS["causal_conv_silu"], _source("causal_conv_silu"))
    assert found and all("F.conv1d" not in source and "_depthwise_conv1d_kernel" in source for _, source in found)
    assert {config["BLOCK_T"] for config, _ in found} >= {256, 512, 1024}
    # The causal slice and the SiLU are held by the convolution's store: one kernel.
    assert all(kernel_count(source) == 1 and "tl.sigmoid" in source for _, source in found)
    # A per-channel scale is not: a fused kernel follows (in its fast and general forms).
    assert all(kernel_count(source) == 3 and "_fused[grid](" in source
               for _, source in variants(PROGRAMS["strided_conv_scale"], _source("strided_conv_scale")))


@pytest.mark.gpu
def test_generated_kernels_are_launched_directly_once_compiled(tmp_path: Path) -> None:
    # Our own generated code (not a candidate), imported here to look inside: after the first call each
    # kernel's later launches go through its compiled launcher, and an input of another alignment (a new
    # specialisation) is compiled for and still right.
    import importlib.util

    problem = load_problem(FOLDER / "graph_around_a_scan.py")
    path = tmp_path / "solution.py"
    path.write_text(propose(problem, "triton", limit=1).variants[0].source)
    spec = importlib.util.spec_from_file_location("direct_launch_solution", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, reference = module.ModelNew().cuda(), problem.module.Model().cuda()
    x = torch.randn(4, 37, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(model(x), reference(x))
    launchers = [value for value in vars(module).values() if type(value).__name__.startswith("_Direct")]
    used = [launcher for launcher in launchers if launcher.compiled]
    assert len(used) == 2 and all(isinstance(entry, tuple) for one in used for entry in one.compiled.values())
    shifted = torch.randn(4 * 37 + 1, device="cuda")[1:].view(4, 37)  # 4 bytes past a 16-byte boundary
    torch.testing.assert_close(model(shifted), reference(shifted))
    torch.testing.assert_close(model(shifted), reference(shifted))
    assert all(len(launcher.compiled) == 2 for launcher in used)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_variants_compile_run_and_are_timed_on_the_gpu(tmp_path: Path, name: str, pool: WorkerPool) -> None:
    # The interpreter checks the arithmetic; only the GPU compiles the kernels (layouts, tl.dot precisions).
    for index, (config, source) in enumerate(variants(PROGRAMS[name], _source(name), limit=2)):
        path = tmp_path / f"{name}_{index}.py"
        path.write_text(source)
        verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(platform="cuda", language="triton", trials=1),
                           pool=pool)
        assert verdict.verdict == Outcome.CORRECT, f"{config}: {verdict.reason}"
        assert verdict.runtime_ms is not None and verdict.runtime_ms > 0


REDUCTION_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {call} * 0.5 + 1.0


def get_inputs():
    return [torch.randn(3, 37, 6)]


def get_input_variants():
    return [[torch.randn(2, 150, 3)], [torch.randn(1, 1, 9)]]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize(("op", "dim", "keepdim"), [
    ("sum", 1, False), ("mean", 2, True), ("amax", 2, False), ("amin", 1, True), ("logsumexp", 0, False),
    ("softmax", 1, None), ("log_softmax", 1, None), ("log_softmax", 2, None),
])
def test_each_reduction_over_each_kind_of_dim(tmp_path: Path, op: str, dim: int, keepdim: bool | None) -> None:
    """Middle, last and first dims; reduced and full-size outputs; a multi-pass walk on the long variant."""
    shape = (3, 37, 6)
    if keepdim is None:
        call, reduced, attrs = f"torch.{op}(x, dim={dim})", shape, {"dim": dim}
    else:
        call = f"torch.{op}(x, dim={dim}, keepdim={keepdim})"
        reduced = tuple(1 if d == dim else n for d, n in enumerate(shape) if keepdim or d != dim)
        attrs = {"dim": dim, "keepdim": keepdim}
    problem = REDUCTION_PROBLEM.format(call=call)
    (tmp_path / "problem.py").write_text(problem)
    program = Program(
        inputs=(TensorSpec("x", shape, static=(False, False, False)),), params=(),
        nodes=(_n("r", op, ("x",), reduced, **attrs), _n("h", "mul", ("r", 0.5), reduced),
               _n("out", "add", ("h", 1.0), reduced)),
        outputs=("out",))
    found = variants(program, problem)
    walked = [v for v in found if v[0]["BLOCK_R"] == 128] if dim == 1 else []  # 150 long: walked in blocks
    for config, source in [found[0], *walked]:
        path = tmp_path / f"solution_{config['BLOCK_R']}.py"
        path.write_text(source)
        verdict = evaluate(tmp_path / "problem.py", path, fast_options(language="triton", trials=1))
        assert verdict.verdict == Outcome.CORRECT, f"{config}: {verdict.reason}"


def _linear_relu(rows: int) -> Program:
    return Program(
        inputs=(_x((rows, 768), (True, False)),),
        params=(TensorSpec("linear.weight", (768, 768)), TensorSpec("linear.bias", (768,))),
        heavy=_n("h", "linear", ("x", "linear.weight", "linear.bias"), (rows, 768)),
        nodes=(_n("out", "relu", ("h",), (rows, 768)),), outputs=("out",))


def test_a_small_product_is_tiled_to_fill_the_gpu_first() -> None:
    # 128 x 768 in 64 x 64 tiles is 24 programs, a fifth of an H200's multiprocessors.
    found = [config for config, _ in variants(_linear_relu(128), "", limit=6)]
    programs = [-(-128 // c["BLOCK_M"]) * -(-768 // c["BLOCK_N"]) for c in found]
    assert min(programs) >= 96, list(zip(found, programs, strict=True))
    assert [c["precision"] for c in found[:2]] == ["ieee", "tf32x3"]
    # A large product keeps the tile that is good on most shapes.
    [(large, _)] = variants(_linear_relu(8192), "", limit=1)
    assert (large["BLOCK_M"], large["BLOCK_N"]) == (64, 64)


SCALAR_BEFORE_GEMM = '''"""A learned 0-d temperature's exp, computed before the product it scales."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, a, b):
        return self.log_scale.exp() * (a @ b.t())


def get_inputs():
    return [torch.randn(8, 16), torch.randn(12, 16)]


def get_init_inputs():
    return []
'''


def test_a_kernel_left_with_a_0d_output_is_refused_in_one_line(tmp_path: Path) -> None:
    """Partitioned, the 0-d exp is a kernel of its own whose output is a run-time scalar: one line, no KeyError."""
    path = tmp_path / "scalar_before_gemm.py"
    path.write_text(SCALAR_BEFORE_GEMM)
    with pytest.raises(LoweringError, match="a 0-d output"):
        propose(load_problem(path), "triton", limit=2)
