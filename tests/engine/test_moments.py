"""Batch statistics (`moments`): a batch norm in training mode as one statistics kernel and one pointwise kernel, and
the small kernels moving the layer's running statistics and count.

The op's meaning is checked against torch on odd shapes; the cut is checked for what it is (the statistics read back
through views in Python, the normalization one kernel, each buffer's new value one more); the kernels it writes are
judged by the real harness (outputs and buffers) in C++, in Triton's CPU interpreter, and (marked gpu) on CUDA, with
float32 and bfloat16 problems and their other input sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
from kforge.engine.partition import partition
from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options

FOLDER = PROBLEMS / "engine"

BF16_PROBLEM = '''"""Batch norm in training mode of a bfloat16 image batch (module and input in bfloat16)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)
        self.to(torch.bfloat16)

    def forward(self, x):
        return self.norm(x) * 0.5


def get_inputs():
    return [(torch.randn(4, 6, 5, 7) * 2.0 + 3.0).to(torch.bfloat16)]


def get_input_variants():
    return [[torch.randn(3, 6, 9, 2).to(torch.bfloat16)]]


def get_init_inputs():
    return [6]
'''

# Few channels of many values: the statistics kernel splits each channel into parts (4000 values: three of
# 1024 and one of 928 with 1024-value blocks, the second configuration) and joins them in a second kernel.
PARTS_PROBLEM = '''"""Batch norm in training mode of three channels of 4000 values each, shifted far from zero."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, affine=False)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 3, 40, 50) * 0.5 + 100.0]


def get_input_variants():
    return [[torch.randn(3, 3, 33, 29) * 4.0 - 7.0]]


def get_init_inputs():
    return [3]
'''

# Training batch norm, relu, a reshape and a full sum: the statistics kernel, the pointwise kernel, then the sum
# (split in two where its rows are long). Below 32768 elements (the C++ kernels' kParallelElements) every loop runs
# on the calling thread; at 7 x 3 x 4096 the statistics, pointwise and part sums run in parallel (86016
# elements; the sum cut into 168 parts of 512) and the sum of the parts on the calling thread.
SUM_PROBLEM = '''"""Batch norm in training mode, relu, then the sum of everything."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return torch.relu(self.norm(x)).reshape(BATCH, -1).sum()


BATCH = {batch}


def get_inputs():
    return [torch.randn(BATCH, {channels}, {length}) * 1.5 + 0.5]


def get_init_inputs():
    return [{channels}]
'''

# Runs shorter than the C++ kernel's kShortRun (16): read in blocks of rows, several narrow rows at a time (at least
# 64 values), the last group of a block partial. (1031, 7): 7217 elements, one block on the calling thread, groups
# of 10 rows and a last one of 1; (70001, 5): 21 blocks in parallel, groups of 13 rows; (4001, 6, 3): runs of 3,
# 4 blocks, groups of 4 rows. Values off zero, not far: eager's float statistics of (70001, 5) at a mean of 50
# are 1e-4 off in the output (the kernel's in double are 1e-6 off), past the harness's tolerance.
ROWS_PROBLEM = '''"""Batch norm in training mode of a batch of shape {shape}, shifted off zero."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn{shape} * 1.5 + 3.0]


def get_init_inputs():
    return [{channels}]
'''

WRITTEN = {"bf16": BF16_PROBLEM, "parts": PARTS_PROBLEM,
           "sum_serial": SUM_PROBLEM.format(batch=5, channels=3, length=7),
           "sum_parallel": SUM_PROBLEM.format(batch=7, channels=3, length=4096),
           **{f"rows_{'_'.join(map(str, shape))}": ROWS_PROBLEM.format(shape=shape, channels=shape[1])
              for shape in [(1031, 7), (70001, 5), (4001, 6, 3)]}}


@pytest.mark.parametrize("shape", [(7, 3), (5, 4, 9), (2, 3, 5, 7), (3, 2, 1, 4, 5), (1, 6, 1)])
def test_moments_are_each_channels_mean_and_biased_variance(shape: tuple[int, ...]) -> None:
    x = torch.randn(shape, dtype=torch.float64) * 3 + 1
    node = ir.Node("m", "moments", ("x",), (2, shape[1]))
    got = ir.apply(node, [x])
    dims = [0, *range(2, len(shape))]
    assert got.shape == (2, shape[1]) and got.dtype == torch.float32
    torch.testing.assert_close(got[0], x.mean(dims).float())
    torch.testing.assert_close(got[1], x.var(dims, correction=0).float())


def test_a_training_batch_norm_is_its_statistics_kernel_then_one_pointwise_kernel() -> None:
    parts = partition(capture(load_problem(FOLDER / "graph_batchnorm2d_train.py")).program)
    assert parts.summary() == ("conv2d | add | moments | slice | slice | view | view | view | view | mul+mul+add | "
                               "sub+add+rsqrt+mul+mul+add+relu | mul+mul+mul+add")
    assert parts.graph.written == (("norm.num_batches_tracked", "norm_count_next"),
                                   ("norm.running_mean", "norm_running_mean"), ("norm.running_var", "norm_running_var"))
    normalize = next(kernel for kernel in parts.kernels if kernel.output == "relu").program
    stats = [spec for spec in normalize.inputs if spec.name.endswith(("_mean", "_var"))]
    assert [spec.shape for spec in stats] == [(1, 5, 1, 1), (1, 5, 1, 1)]  # per channel, broadcast in the kernel


def test_a_half_precision_batch_norm_normalizes_in_float32_and_narrows_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "bf16.py"
    path.write_text(BF16_PROBLEM)
    program = partition(capture(load_problem(path)).program).graph
    by_name = {node.name: node for node in program.nodes}
    [moments] = [node for node in program.nodes if node.op == "moments"]
    assert moments.dtype == "float32"
    centered = next(node for node in program.nodes if node.op == "sub")
    assert centered.dtype == "float32" and by_name[str(centered.args[0])].op == "cast"
    assert by_name[program.outputs[0]].dtype == "bfloat16"


@pytest.mark.parametrize("name", ["norm_batch_norm1d_train", "norm_batch_norm2d_train"])
def test_the_suites_training_batch_norms_are_two_kernels_and_three_for_the_buffers(name: str) -> None:
    suite = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"
    for language in ("cpp", "triton"):
        assert propose(load_problem(suite / f"{name}.py"), language, limit=1).kernels == 5


def _judged(problem: Path, language: str, platform: str, tmp_path: Path) -> None:
    found = propose(load_problem(problem), language, limit=3)
    assert found.kernels >= 2
    for index, variant in enumerate(found.variants):
        path = tmp_path / f"solution_{language}_{index}.py"
        path.write_text(variant.source)
        verdict = evaluate(problem, path, fast_options(platform=platform, language=language, trials=2))
        assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{variant.source}"


def _problem(name: str, tmp_path: Path) -> Path:
    if name not in WRITTEN:
        return FOLDER / f"{name}.py"
    problem = tmp_path / f"{name}.py"
    problem.write_text(WRITTEN[name])
    return problem


def test_few_channels_of_many_values_are_split_into_parts_and_joined(tmp_path: Path) -> None:
    sources = [variant.source for variant in propose(load_problem(_problem("parts", tmp_path)), "triton",
                                                     limit=3).variants]
    assert "BLOCK=1024" in sources[1] and "_moments_combine" in sources[1]


@pytest.mark.parametrize("name", ["graph_batchnorm1d_train_rows", "bf16", "parts"])
def test_training_batch_norms_are_correct_in_the_triton_interpreter(tmp_path: Path, name: str) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    _judged(_problem(name, tmp_path), "triton", "cpu", tmp_path)


def test_a_half_precision_training_batch_norm_is_refused_in_cpp(tmp_path: Path) -> None:
    # The C++ backend widens the whole module to float32 (engine/widen.py), its running statistics too.
    with pytest.raises(LoweringError, match="batch_norm in training mode in half precision"):
        propose(load_problem(_problem("bf16", tmp_path)), "cpp", limit=1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sum_serial", "sum_parallel"])
def test_a_training_batch_norm_then_a_full_sum_is_correct_in_cpp_on_one_thread_and_in_parallel(
        tmp_path: Path, name: str) -> None:
    problem = _problem(name, tmp_path)
    sources = [variant.source for variant in propose(load_problem(problem), "cpp", limit=1).variants]
    assert "if(x.numel() >= 32768)" in sources[0] and "if(rows * width >= kParallelElements)" in sources[0]
    _judged(problem, "cpp", "cpu", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rows_1031_7", "rows_70001_5", "rows_4001_6_3"])
def test_a_training_batch_norm_of_short_runs_is_correct_in_cpp_read_row_by_row(tmp_path: Path, name: str) -> None:
    _judged(_problem(name, tmp_path), "cpp", "cpu", tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["graph_batchnorm1d_train_rows", "graph_batchnorm2d_train", "bf16", "parts"])
def test_training_batch_norms_are_correct_on_the_gpu(tmp_path: Path, name: str) -> None:
    _judged(_problem(name, tmp_path), "triton", "cuda", tmp_path)
