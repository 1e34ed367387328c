"""The generated convolution (an implicit GEMM, `data/engine/triton/_conv.j2`): what the Triton backend offers for
a convolution by a parameter, judged by the real harness in Triton's CPU interpreter on every input set.

The problems: the bundled conv2d example, the small `tests/problems/engine/conv2d_*.py` (stride and dilation 2,
groups, no padding, no bias, odd sizes, a non-contiguous input, a broadcast operand, an epilogue with a
reduction) and a full conv1d written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine.capture import LoweringError
from kforge.engine.propose import propose
from kforge.engine.tune import Variant
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.sandbox import WorkerPool
from kforge.verify.static_check import check_source
from kforge.verify.verdict import Outcome
from tests.conftest import EXAMPLES, PROBLEMS, fast_options, kernel_count

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

EXAMPLE = EXAMPLES / "conv2d_scaled_mish" / "problem.py"
INPUT_WEIGHT = PROBLEMS / "engine" / "conv2d_input_weight.py"  # the one the generated convolution refuses
CONV2D = {path.stem: path for path in sorted((PROBLEMS / "engine").glob("conv2d_*.py")) if path != INPUT_WEIGHT}

CONV1D = '''"""A full (not depthwise) conv1d with stride 3, then GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(5, 24, 5, stride=3, padding=2)

    def forward(self, x):
        return F.gelu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 5, 31)]


def get_input_variants():
    return [[torch.randn(1, 5, 1)], [torch.randn(3, 5, 64)]]


def get_init_inputs():
    return []
'''


DEPTHWISE2D = '''"""A depthwise 3x3 conv2d (one channel a group), then SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 6, 3, padding=1, groups=6, bias=False)

    def forward(self, x):
        return F.silu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 6, 5, 7)]


def get_input_variants():
    return [[torch.randn(1, 6, 1, 1)]]


def get_init_inputs():
    return []
'''


def _variants(problem: Path, vendor_gemm: bool = False, limit: int = 24) -> list[Variant]:
    return list(propose(load_problem(problem), "triton", vendor_gemm=vendor_gemm, limit=limit).variants)


def _pick(found: list[Variant], **wanted: object) -> Variant:
    return next(v for v in found if all(v.config.get(key) == value for key, value in wanted.items()))


def _judge(tmp_path: Path, problem: Path, variant: Variant) -> None:
    path = tmp_path / f"{problem.stem}_solution.py"
    path.write_text(variant.source)
    verdict = evaluate(problem, path, fast_options(language="triton", trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{variant.config}: {verdict.reason}\n{variant.source}"


def _written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def _conv1d(tmp_path: Path) -> Path:
    return _written(tmp_path, "conv1d_gelu", CONV1D)


@pytest.mark.parametrize("name", sorted(CONV2D))
def test_default_variant_is_correct_in_the_interpreter(tmp_path: Path, name: str) -> None:
    [variant] = _variants(CONV2D[name], limit=1)
    assert "tl.dot" in variant.source and "F.conv" not in variant.source
    _judge(tmp_path, CONV2D[name], variant)


def test_a_full_conv1d_falls_out_of_the_same_template(tmp_path: Path) -> None:
    problem = _conv1d(tmp_path)
    [variant] = _variants(problem, limit=1)
    assert "_fused[grid](x, p_conv_weight, p_conv_bias, out, M, width," in variant.source
    assert " H," not in variant.source  # one spatial dim: no rows in the kernel
    _judge(tmp_path, problem, variant)


def test_a_depthwise_conv2d_is_tiled_narrow_first(tmp_path: Path) -> None:
    problem = _written(tmp_path, "depthwise2d", DEPTHWISE2D)
    [variant] = _variants(problem, limit=1)
    # One channel a group: the narrowest tile tl.dot allows, one tile a group.
    assert variant.config["BLOCK_N"] == 16 and "GROUP_N: tl.constexpr = 1, TILES_G: tl.constexpr = 1" in variant.source
    _judge(tmp_path, problem, variant)


def test_the_bundled_example_is_one_launch_with_the_epilogue_on_the_accumulator(tmp_path: Path) -> None:
    found = _variants(EXAMPLE, limit=12)
    first = found[0]
    # 8 x 32 x 32 pixels by 32 channels: the first tile fills most of a 132-multiprocessor GPU, and wastes no
    # column of its channel tile; float32 keeps full precision first.
    programs = -(-8 * 32 * 32 // first.config["BLOCK_M"]) * -(-32 // first.config["BLOCK_N"])
    assert programs >= 96 and first.config["BLOCK_N"] <= 32 and first.config["precision"] == "ieee"
    assert {v.config["precision"] for v in found} == {"ieee", "tf32x3"}
    source = first.source
    assert kernel_count(source) == 1 and source.count("[grid](") == 1
    # Fixed sizes are constants; the launch passes the tensors and the input's sizes; the per-channel scale is
    # the parameter itself (its reshape is not computed per call).
    assert "C_IN: tl.constexpr = 32, N: tl.constexpr = 32, K: tl.constexpr = 288" in source
    assert "_fused[grid](x, p_conv_weight, p_conv_bias, p_scale, out, M, height, width, num_warps=" in source
    assert ".reshape(" not in source[source.index("def forward"):]
    # Judged in its widest tile: the interpreter's time goes with the number of programs, the code is the same.
    _judge(tmp_path, EXAMPLE, _pick(found, BLOCK_M=128, BLOCK_N=64))


def test_other_tiles_are_correct_too(tmp_path: Path) -> None:
    # Twenty channels a group in tiles of 16: two tiles a group, the second masked; K = 12 masked too.
    found = _variants(CONV2D["conv2d_strided_dilated"])
    narrow = _pick(found, BLOCK_N=16)
    assert "TILES_G: tl.constexpr = 2" in narrow.source and "TILES_N: tl.constexpr = 4" in narrow.source
    _judge(tmp_path, CONV2D["conv2d_strided_dilated"], narrow)


def test_a_reduction_after_the_convolution_runs_in_its_own_fused_kernel(tmp_path: Path) -> None:
    found = _variants(CONV2D["conv2d_group_logsoftmax"])
    assert all("def _conv(" in v.source and "_conv_kernel[grid](" in v.source and kernel_count(v.source) >= 2
               for v in found)
    # The convolution's warps and the fused kernel's are both in the configuration, apart.
    assert {"conv_num_warps", "num_warps", "BLOCK_R"} <= set(found[0].config)


def test_generated_variants_pass_the_static_policy_without_the_vendor(tmp_path: Path) -> None:
    problems = [EXAMPLE, *CONV2D.values(), _conv1d(tmp_path)]
    for problem in problems:
        for variant in _variants(problem):
            assert check_source(variant.source, Policy()) == [], (problem.name, variant.config)
            assert "F.conv" not in variant.source and "torch.conv" not in variant.source
    # The vendor's variants (allowed only under the vendor policy) are the check's counterexample.
    vendor = _pick(_variants(EXAMPLE, vendor_gemm=True), vendor=True)
    assert "F.conv2d(" in vendor.source and check_source(vendor.source, Policy()) != []
    assert check_source(vendor.source, Policy().allowing_vendor_gemm()) == []


def test_a_weight_that_is_no_parameter_is_refused_in_one_line_then_left_to_the_vendor() -> None:
    with pytest.raises(LoweringError, match=r"cannot generate this conv2d \(its weight .* not a parameter") as caught:
        _variants(INPUT_WEIGHT)
    assert "\n" not in str(caught.value)
    found = _variants(INPUT_WEIGHT, vendor_gemm=True)
    assert found and all(v.config.get("vendor") for v in found)


def test_generated_and_vendor_convolutions_are_offered_in_turn() -> None:
    kinds = [bool(v.config.get("vendor")) for v in _variants(EXAMPLE, vendor_gemm=True, limit=12)]
    # A run that judges only a dozen variants still measures both kinds, the generated one first.
    assert kinds[:4] == [False, True, False, True]
    assert 4 <= kinds.count(True) <= 8


@pytest.mark.gpu
@pytest.mark.parametrize("problem", [EXAMPLE, *CONV2D.values(), CONV1D, DEPTHWISE2D],
                         ids=["example", *CONV2D, "conv1d", "depthwise2d"])
def test_variants_compile_and_are_correct_on_the_gpu(tmp_path: Path, problem: Path | str,
                                                     pool: WorkerPool) -> None:
    # The interpreter checks the arithmetic; only the GPU compiles the kernels (tl.dot layouts, precisions).
    # The example's first four tiles; the other problems' first two (each tile costs a Triton compile).
    limit = 4 if problem == EXAMPLE else 2
    if isinstance(problem, str):
        problem = _written(tmp_path, "problem", problem)
    for variant in _variants(problem, limit=limit):
        path = tmp_path / "solution.py"
        path.write_text(variant.source)
        verdict = evaluate(problem, path, fast_options(platform="cuda", language="triton", trials=1), pool=pool)
        assert verdict.verdict == Outcome.CORRECT, f"{variant.config}: {verdict.reason}"


WIDE_CHANNELS = '''"""A grouped 3x3 conv2d whose groups hold more than a K step of channels (48: a full step of 32
and a masked one): the tap-major loop."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(96, 40, 3, padding=1, groups=2)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 96, 7, 9)]


def get_init_inputs():
    return []
'''
WIDE_CONV1D = '''"""A conv1d of 64 channels in, 24 out, stride 2, no padding."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(64, 24, 3, stride=2)

    def forward(self, x):
        return self.conv(x) * 0.5


def get_inputs():
    return [torch.randn(3, 64, 17)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("text", [WIDE_CHANNELS, WIDE_CONV1D], ids=["grouped_conv2d", "conv1d"])
def test_wide_groups_take_one_tap_a_step_and_are_correct(tmp_path: Path, text: str) -> None:
    problem = _written(tmp_path, "wide", text)
    variant = _variants(problem, limit=1)[0]
    assert "for step in range(" in variant.source  # the tap-major loop
    _judge(tmp_path, problem, variant)
