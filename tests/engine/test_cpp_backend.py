"""The C++ backend: every lowerable problem renders to a standalone solution that passes the harness's static
policy; compiled and judged by the harness (slow), the solutions are correct, which checks every op spelling
of ops.toml against the reference (unary_zoo uses them all)."""

from __future__ import annotations

import ast
import platform
import re
import shutil
from pathlib import Path

import pytest
import torch

from kforge.engine import cpp_backend, cpp_math, ir
from kforge.engine.capture import LoweringError, capture
from kforge.engine.cpp_math import MathLibrary
from kforge.engine.simplify import simplify
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source
from tests.conftest import EXAMPLES, PROBLEMS, fast_options

ENGINE_PROBLEMS = PROBLEMS / "engine"
# Problems one kernel computes (the graph_* ones are partitioned first: tests/engine/test_partition.py).
LOWERABLE = sorted(EXAMPLES.glob("*/problem.py")) + sorted(
    p for p in ENGINE_PROBLEMS.glob("*.py") if "unsupported" not in p.name and not p.name.startswith("graph_"))


def name_of(path: Path) -> str:
    return path.parent.name if path.name == "problem.py" else path.stem


def variants_for(path: Path, vendor: bool = False, limit: int = 4) -> list[tuple[dict[str, object], str]]:
    problem = load_problem(path)
    return cpp_backend.variants(simplify(capture(problem).program), problem.source, vendor_gemm=vendor, limit=limit)


@pytest.mark.parametrize("path", LOWERABLE, ids=name_of)
def test_rendered_solutions_are_standalone_and_pass_the_static_policy(path: Path) -> None:
    found = variants_for(path)
    assert found and len({source for _, source in found}) == len(found)
    for _config, source in found:
        tree = ast.parse(source)
        assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
        assert "kforge." not in source.replace("kforge_builtin_", "")
        assert check_source(source, Policy()) == []


def test_vendor_variants_only_when_the_policy_allows_them() -> None:
    path = EXAMPLES / "linear_gelu_tanh" / "problem.py"
    assert all("at::linear" not in source for _, source in variants_for(path))
    vendor = [config for config, source in variants_for(path, vendor=True, limit=8) if "at::linear" in source]
    assert vendor and all(config["vendor"] for config in vendor)


def test_tunables_reach_the_generated_code() -> None:
    found = variants_for(EXAMPLES / "linear_gelu_tanh" / "problem.py", limit=8)
    blocks = {config["block_m"] for config, _ in found}
    assert len(blocks) > 1
    for config, source in found:
        assert f"constexpr int64_t kBlockM = {config['block_m']};" in source


def test_dtype_checks_name_the_dtype_each_input_must_have() -> None:
    # x is float32 and levels int64: each check's message names its dtype whole ("must be loat32" was a slice
    # of the ATen constant's name).
    _, source = variants_for(ENGINE_PROBLEMS / "int_levels_where.py", limit=1)[0]
    checks = dict(re.findall(r'TORCH_CHECK\((\w+)\.scalar_type\(\) == torch::k\w+, "\1 must be (\w+)"\)', source))
    assert sorted(checks.values()) == ["float32", "int64"], source


def test_a_second_reduction_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.softmax(x, dim=-1).sum(dim=-1)\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 8)]\n\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(LoweringError, match=r"^builtin engine: cannot lower aten\.sum .*--model$"):
        variants_for(path)


JUDGED = [ENGINE_PROBLEMS / name for name in ("unary_zoo.py", "norm_relu.py", "ea_conv2d_clamps.py",
                                              "ea_bmm_logsoftmax.py", "ea_linear_row_sum.py", "ea_size_one.py",
                                              "seq_logmeanexp.py", "masked_softmax.py", "mask_logic.py")]


@pytest.mark.slow
@pytest.mark.parametrize("path", JUDGED, ids=name_of)
def test_generated_solutions_are_correct_in_the_harness(path: Path, tmp_path: Path) -> None:
    _config, source = variants_for(path, limit=1)[0]
    solution = tmp_path / "solution.py"
    solution.write_text(source)
    verdict = evaluate(path, solution, fast_options(measure=False))
    assert verdict.correct, verdict.reason


# The branch-free math of common.cpp.j2, through ops.toml's spellings, built alone by kforge.engine.cpp_math (our
# template code, not candidate code: a plain shared library built in about a second, called through ctypes).
MATH_OPS = ("exp", "log", "log1p", "expm1", "erf", "gelu", "sin", "cos")
EXP_USERS = ("sigmoid", "tanh", "silu", "mish", "softplus", "gelu_tanh", "elu")  # built on exp_approx, expm1_approx
INF, NAN = float("inf"), float("nan")
SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38, 1e-30, -1e-30, 1e-8, -1e-8,
           0.5, -0.5, 1.0, -1.0, 88.7, 88.73, 89.0, -87.5, -103.0, -110.0, 3.4e38, -3.4e38]

math_node = cpp_math.node


def cpu_targets() -> list[str]:
    targets = ["baseline"]
    if platform.machine() == "x86_64" and torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        targets.append("x86-64-v3")  # the AVX2+FMA copy that MULTIVERSION builds
    return targets


@pytest.fixture(scope="module", params=cpu_targets())
def math_library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> MathLibrary:
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    return cpp_math.build(tmp_path_factory.mktemp(f"math_{request.param}"), (*MATH_OPS, *EXP_USERS, "pow"),
                          request.param)


def test_every_math_spelling_vectorizes(math_library: MathLibrary) -> None:
    scalar = [op for op in math_library.loop_lines if not math_library.vectorized(op)]
    assert scalar == []


def grid(low: float, high: float, count: int = 400_001) -> torch.Tensor:
    return torch.linspace(low, high, count)


def magnitudes() -> torch.Tensor:
    """Every decade of the float range, both signs, denormals included."""
    values = torch.pow(10.0, torch.linspace(-45.0, 38.5, 200_001, dtype=torch.float64)).float()
    return torch.cat([values, -values])


MATH_DOMAINS = {"exp": (grid(-110, 90),), "log": (grid(-1, 100),), "log1p": (grid(-1, 10), grid(-1, -0.99)),
                "expm1": (grid(-40, 90), grid(-1, 1)), "erf": (grid(-6, 6),), "gelu": (grid(-8, 8),),
                "sin": (grid(-100, 100), grid(-12_000, 12_000)), "cos": (grid(-100, 100), grid(-12_000, 12_000))}


# Each unary op's value at -inf and +inf, as its formula gives them in IEEE arithmetic, stated here rather than
# read off torch: torch's kernels differ there by the instruction set they picked (its AVX-512 gelu gives NaN at
# +inf where its scalar loop gives inf, which failed this test on AVX-512 machines).
EDGES = {"exp": (0.0, INF), "log": (NAN, INF), "log1p": (NAN, INF), "expm1": (-1.0, INF), "erf": (-1.0, 1.0),
         "gelu": (NAN, INF), "sin": (NAN, NAN), "cos": (NAN, NAN), "sigmoid": (0.0, 1.0), "tanh": (-1.0, 1.0),
         "silu": (NAN, INF), "mish": (NAN, INF), "softplus": (0.0, INF), "gelu_tanh": (NAN, INF),
         "elu": (-1.0, INF)}


def expected_float32(node: ir.Node, args: list[torch.Tensor]) -> torch.Tensor:
    """The float32 result kforge's spellings must give: the exact result (torch in float64) rounded to float32,
    with the edges of EDGES at infinite arguments of a unary op. Not torch's float32 result: its AVX-512 gelu also
    overflows to inf for finite arguments above 1.7e38, where the exact result is finite."""
    expected = ir.apply(node, [a.double() for a in args]).float()
    if node.op in EDGES:
        (x,) = args
        at_minus, at_plus = EDGES[node.op]
        expected = torch.where(x == -INF, at_minus, torch.where(x == INF, at_plus, expected))
    return expected


def test_every_unary_math_op_has_its_edges_stated() -> None:
    assert set(EDGES) == set(MATH_OPS) | set(EXP_USERS)


def assert_like_torch(ours: torch.Tensor, node: ir.Node, args: list[torch.Tensor], rtol: float, atol: float) -> None:
    """NaN, inf (with its sign) where the expected float32 result has them; elsewhere within rtol, atol of the
    exact result (torch in float64)."""
    expected = expected_float32(node, args)
    exact = ir.apply(node, [a.double() for a in args])
    assert torch.equal(ours.isnan(), expected.isnan())
    assert torch.equal(ours.isinf(), expected.isinf())
    assert torch.equal(ours[expected.isinf()], expected[expected.isinf()])
    finite = expected.isfinite()
    error = (ours[finite].double() - exact[finite]).abs()
    excess = error - (atol + rtol * exact[finite].abs())
    worst = int(excess.argmax())
    assert excess[worst] <= 0, f"{node.op}{tuple(a[finite][worst].item() for a in args)}: error {error[worst]:.3g}"


@pytest.mark.parametrize("op", MATH_OPS)
def test_math_spellings_match_torch_float32(math_library: MathLibrary, op: str) -> None:
    x = torch.cat([*MATH_DOMAINS[op], torch.tensor(SPECIAL), magnitudes()])
    if op in ("sin", "cos"):
        x = x[~(x.abs() > 12_000)]  # the documented range (NaN and inf kept)
    # Bounded results are judged absolutely near their zeros (float32 itself holds no better there);
    # the others relatively down to the smallest denormal, so tiny arguments of expm1 and log1p count.
    atol = 2e-7 if op in ("erf", "gelu", "sin", "cos") else 3e-45
    assert_like_torch(math_library(op, x), math_node(op), [x], rtol=4e-7, atol=atol)


def test_pow_spelling_matches_torch_float32(math_library: MathLibrary) -> None:
    values = torch.tensor([*SPECIAL, 2.0, -2.0, 3.0, -3.0, 0.3, 1.7, -1.7, 2.5, -2.5, 7.0, -7.0, 1e10, -1e10,
                           8388609.0, -8388609.0, 16777216.0])
    a, b = (t.flatten() for t in torch.meshgrid(values, values, indexing="ij"))
    generator = torch.Generator().manual_seed(0)
    base = torch.rand(200_000, generator=generator) * 100.0
    exponent = torch.randn(200_000, generator=generator) * 5.0
    a = torch.cat([a, base, -base])
    b = torch.cat([b, exponent, exponent.round()])  # a negative base only with integer exponents
    # e^(b ln a): the relative error grows with |b ln a|, under 1e-5 for any finite float result.
    assert_like_torch(math_library("pow", a, b), math_node("pow"), [a, b], rtol=2e-5, atol=3e-45)


@pytest.mark.parametrize("op", EXP_USERS)
def test_spellings_built_on_exp_match_torch_float32(math_library: MathLibrary, op: str) -> None:
    x = torch.cat([grid(-120, 120), torch.tensor(SPECIAL), magnitudes()])
    # Judged absolutely below 1e-7: where e^x underflows, x / (1 + e^-x) is 0 in float32 (torch's too).
    assert_like_torch(math_library(op, x), math_node(op), [x], rtol=4e-7, atol=1e-7)
