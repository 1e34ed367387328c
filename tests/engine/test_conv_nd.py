"""conv3d and the transposed convolutions (conv_transpose1d/2d): captured, lowered by both backends, and judged
correct by the real harness on every input set of the problems `tests/problems/engine/conv3d_*.py` and
`convtranspose*.py` (odd sizes; stride, padding, output padding, dilation and groups, different per dim; module
and functional spellings; an epilogue on the accumulator, and a reduction after the convolution).

Triton runs in its CPU interpreter; the C++ solutions are compiled (`slow`). End to end, the engine suite's four
3-D and transposed problems come out of `kforge optimize --model builtin --platform cpu` correct (`slow`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kforge.engine import cpp_backend, ir
from kforge.engine.capture import capture
from kforge.engine.propose import propose
from kforge.engine.simplify import simplify
from kforge.engine.tune import Variant
from kforge.problem import load_problem
from kforge.store import Store
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool
from kforge.verify.static_check import check_source
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options
from tests.engine.test_capture import assert_same_as_reference

FOLDER = PROBLEMS / "engine"
CASES = {path.stem: path for path in sorted([*FOLDER.glob("conv3d_*.py"), *FOLDER.glob("convtranspose*.py")])}
SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"
SUITE_PROBLEMS = ["conv3d_small_kernel_relu", "conv3d_patchify_quick_gelu", "convtranspose_1d_tanh",
                  "convtranspose_2d_stride2_relu"]


def _triton(path: Path, vendor_gemm: bool = False, limit: int = 1) -> list[Variant]:
    pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")
    return list(propose(load_problem(path), "triton", vendor_gemm=vendor_gemm, limit=limit).variants)


def _judge(tmp_path: Path, problem: Path, source: str, language: str) -> None:
    path = tmp_path / f"{problem.stem}_{language}.py"
    path.write_text(source)
    options = fast_options(language="triton", trials=1) if language == "triton" else fast_options(measure=False)
    verdict = evaluate(problem, path, options)
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


def test_there_are_cases_of_each_op() -> None:
    heavy = [capture(load_problem(path)).program.heavy for path in CASES.values()]
    assert {node.op for node in heavy if node is not None} == {"conv3d", "conv_transpose1d", "conv_transpose2d"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_capture_keeps_the_reference_semantics(name: str) -> None:
    captured = capture(load_problem(CASES[name]))
    heavy = captured.program.heavy
    assert heavy is not None and heavy.op in (*ir.CONV_OPS, *ir.CONV_TRANSPOSE_OPS)
    assert_same_as_reference(CASES[name], captured.program, captured.model)


def test_transposed_options_are_captured_per_dim() -> None:
    heavy = capture(load_problem(CASES["convtranspose2d_mixed"])).program.heavy
    assert heavy is not None and heavy.op == "conv_transpose2d"
    assert (heavy.attr("stride"), heavy.attr("padding"), heavy.attr("output_padding"), heavy.attr("dilation"),
            heavy.attr("groups")) == ((2, 3), (1, 0), (1, 2), (1, 2), 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_default_variant_is_correct_in_the_interpreter(tmp_path: Path, name: str) -> None:
    [variant] = _triton(CASES[name])
    assert "tl.dot" in variant.source and "F.conv" not in variant.source
    assert check_source(variant.source, Policy()) == []
    _judge(tmp_path, CASES[name], variant.source, "triton")


def test_a_strided_transposed_convolution_visits_only_the_taps_that_land_on_an_input(tmp_path: Path) -> None:
    # Kernel 4, stride 3: each output phase has at most ceil(4 / 3) = 2 taps, so K = 5 channels x 2, not 5 x 4;
    # three phases, their programs in turn on the grid.
    [variant] = _triton(CASES["convtranspose1d_phased"])
    assert "K: tl.constexpr = 10," in variant.source and "JW: tl.constexpr = 2" in variant.source
    assert "grid = (3 * _cdiv(M, " in variant.source
    # Dilation 2 along the only dim: every tap tried, masked where it falls between inputs.
    [dilated] = _triton(CASES["convtranspose1d_dilated_groups"])
    assert "K: tl.constexpr = 10," in dilated.source and "% SW == 0" in dilated.source and "phase" not in \
        dilated.source
    # Mixed: phases along H only (stride 2, dilation 1), not along W (dilation 2).
    [mixed] = _triton(CASES["convtranspose2d_mixed"])
    assert "JH: tl.constexpr = 2" in mixed.source and "JW:" not in mixed.source and "grid = (2 * " in mixed.source


def test_other_tiles_are_correct_too(tmp_path: Path) -> None:
    found = _triton(CASES["convtranspose2d_mixed"], limit=24)
    wide = next(v for v in found if v.config["BLOCK_N"] >= 32 and v.config["BLOCK_M"] >= 64)
    _judge(tmp_path, CASES["convtranspose2d_mixed"], wide.source, "triton")


def test_vendor_convolution_is_offered_in_turn_under_the_vendor_policy() -> None:
    found = _triton(CASES["convtranspose2d_mixed"], vendor_gemm=True, limit=4)
    assert [bool(v.config.get("vendor")) for v in found] == [False, True, False, True]
    vendor = found[1].source
    assert "F.conv_transpose2d(" in vendor and "output_padding=(1, 2)" in vendor
    assert check_source(vendor, Policy()) != [] and check_source(vendor, Policy().allowing_vendor_gemm()) == []
    assert "F.conv3d(" in _triton(CASES["conv3d_groups_strided"], vendor_gemm=True, limit=2)[1].source


@pytest.mark.gpu
@pytest.mark.parametrize("name", [*sorted(CASES), *SUITE_PROBLEMS])
def test_triton_variants_compile_and_are_correct_on_the_gpu(tmp_path: Path, name: str, pool: WorkerPool) -> None:
    # The interpreter checks the arithmetic; only the GPU compiles the kernels (tl.dot layouts, precisions).
    problem = CASES.get(name, SUITE / f"{name}.py")
    for variant in _triton(problem, limit=2):
        path = tmp_path / "solution.py"
        path.write_text(variant.source)
        verdict = evaluate(problem, path, fast_options(platform="cuda", language="triton", trials=1), pool=pool)
        assert verdict.verdict == Outcome.CORRECT, f"{variant.config}: {verdict.reason}"


def _cpp(path: Path, vendor: bool = False, limit: int = 1) -> list[tuple[dict[str, object], str]]:
    problem = load_problem(path)
    return cpp_backend.variants(simplify(capture(problem).program), problem.source, vendor_gemm=vendor, limit=limit)


def test_cpp_renders_a_direct_kernel_and_the_vendor_call_only_when_allowed() -> None:
    [(_, source)] = _cpp(CASES["convtranspose2d_mixed"])
    assert "conv_transpose3d_direct(" in source and "at::conv_transpose2d" not in source
    assert check_source(source, Policy()) == []
    vendor = [source for config, source in _cpp(CASES["convtranspose2d_mixed"], vendor=True, limit=4)
              if config.get("vendor")]
    assert vendor and "at::conv_transpose2d(" in vendor[0]
    [(_, conv3d)] = _cpp(CASES["conv3d_groups_strided"])
    assert "conv3d_direct(" in conv3d and "at::conv3d" not in conv3d


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpp_default_variant_is_correct_in_the_harness(tmp_path: Path, name: str) -> None:
    [(_, source)] = _cpp(CASES[name])
    _judge(tmp_path, CASES[name], source, "cpp")


@pytest.mark.slow
@pytest.mark.parametrize("name", SUITE_PROBLEMS)
def test_the_suite_problem_comes_out_of_kforge_optimize_correct(tmp_path: Path, name: str) -> None:
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("KFORGE_MODEL", "OPENAI_", "ANTHROPIC_"))},
           "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-m", "kforge", "optimize", str(SUITE / f"{name}.py"), "--model",
                             "builtin", "--platform", "cpu", "--time-budget", "60", "--out", str(out), "--db", str(db),
                             "--baseline", "eager", "--rep-ms", "100", "--timing-rounds", "1"],
                            capture_output=True, text=True, timeout=1500, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    source = out.read_text()
    assert "class ModelNew" in source and "_direct(" in source
    with Store(db) as store:
        run = store.list_runs()[0]
        best = store.best_attempt(run.id)
        assert best is not None and best.attempt.source == source
        assert best.evaluation.verdict["verdict"] == "correct"


def test_ir_evaluates_like_torch() -> None:
    node = ir.Node("y", "conv_transpose1d", ("x", "w"), (2, 3, 8),
                   attrs=ir.make_attrs(stride=(2,), padding=(1,), output_padding=(1,), dilation=(1,), groups=1))
    program = ir.Program(inputs=(ir.TensorSpec("x", (2, 4, 4)),), params=(ir.TensorSpec("w", (4, 3, 3)),),
                         nodes=(), outputs=("y",), heavy=node)
    x, w = torch.randn(2, 4, 4), torch.randn(4, 3, 3)
    [y] = ir.evaluate(program, [x], {"w": w})
    torch.testing.assert_close(y, torch.nn.functional.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1))
