"""The C++ backend: every lowerable problem renders to a standalone solution that passes the harness's static
policy; compiled and judged by the harness (slow), the solutions are correct, which checks every op spelling
of ops.toml against the reference (unary_zoo uses them all)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kforge.engine import cpp_backend
from kforge.engine.capture import LoweringError, capture
from kforge.engine.simplify import simplify
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source
from tests.conftest import EXAMPLES, PROBLEMS, fast_options

ENGINE_PROBLEMS = PROBLEMS / "engine"
LOWERABLE = sorted(EXAMPLES.glob("*/problem.py")) + sorted(
    p for p in ENGINE_PROBLEMS.glob("*.py") if "unsupported" not in p.name)


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


def test_a_second_reduction_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return torch.softmax(x, dim=-1).sum(dim=-1)\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 8)]\n\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(LoweringError, match=r"^builtin engine: cannot lower aten\.sum .*--model$"):
        variants_for(path)


JUDGED = [ENGINE_PROBLEMS / name for name in ("unary_zoo.py", "norm_relu.py", "ea_conv2d_clamps.py",
                                              "ea_bmm_logsoftmax.py", "ea_linear_row_sum.py", "ea_size_one.py",
                                              "seq_logmeanexp.py")]


@pytest.mark.slow
@pytest.mark.parametrize("path", JUDGED, ids=name_of)
def test_generated_solutions_are_correct_in_the_harness(path: Path, tmp_path: Path) -> None:
    _config, source = variants_for(path, limit=1)[0]
    solution = tmp_path / "solution.py"
    solution.write_text(source)
    verdict = evaluate(path, solution, fast_options(measure=False))
    assert verdict.correct, verdict.reason
