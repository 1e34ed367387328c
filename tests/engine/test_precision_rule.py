"""The precision rule (docs/builtin.md, "Precision"): a variant never computes below the precision the reference runs
at in kforge's harness. On a GPU the harness runs float32 matmuls and convolutions at full float32 (the CUDA platform
turns cuBLAS's and cuDNN's TF32 off), so every float32 GEMM and convolution variant computes at float32 accuracy:
on the FMA units (`ieee`) or as three TF32 products (`tf32x3`), never one TF32 product; half-precision ones use the
tensor cores in their own dtype."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from tests.conftest import PROBLEMS

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

REAL_SIZE = Path(__file__).resolve().parents[2] / "benchmarks" / "problems" / "real_size"
FLOAT32 = [REAL_SIZE / "gemm_linear_bias_gelu_fp32.py", REAL_SIZE / "conv_3x3_bias_relu_fp32.py",
           PROBLEMS / "engine" / "linear_gelu.py"]


@pytest.mark.parametrize("path", FLOAT32, ids=lambda path: path.stem)
def test_float32_products_keep_float32_accuracy(path: Path) -> None:
    variants = propose(load_problem(path, check_runs=False), "triton", limit=64).variants
    precisions = {variant.config.get("precision") for variant in variants}
    assert precisions == {"ieee", "tf32x3"}
    for variant in variants:
        assert 'input_precision="tf32")' not in variant.source and "allow_tf32" not in variant.source


def test_half_precision_products_run_in_their_own_dtype() -> None:
    problem = load_problem(REAL_SIZE / "gemm_bmm_scale_bf16.py", check_runs=False)
    variants = propose(problem, "triton", limit=64).variants
    assert {variant.config.get("precision") for variant in variants} == {"default"}
    assert all("input_precision" not in variant.source for variant in variants)


def test_the_cuda_platform_runs_the_reference_at_full_float32() -> None:
    import torch

    from kforge.platforms import platform_class

    before = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        platform_class("cuda")()  # what every harness process and worker does on CUDA (no device needed)
        assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
