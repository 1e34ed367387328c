"""Row reductions whose operands broadcast in full are read where they lie, at their strides, with no copy of
the reduced operand's shape: the engine's whole solution judged by the harness in Triton's interpreter, on
transposed, sliced, expanded and more-than-4-D inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

_HEADER = "import torch\nimport torch.nn as nn\n\n\n"

PROBLEMS = {
    # Distances to every code (a broadcast difference summed over its last dim), then their argmin.
    "nearest_code": '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(19, 13))

    def forward(self, x):
        return torch.argmin(((x.unsqueeze(1) - self.codebook.unsqueeze(0)) ** 2).sum(dim=-1), dim=-1)


def get_inputs():
    return [torch.randn(37, 13)]


def get_input_variants():
    return [[torch.randn(13, 37).t()], [torch.randn(37, 26)[:, ::2]]]
''',
    # A softmax of the output's shape: an operand after it (y) read at its strides too.
    "softmax_times_input": '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(6, 1, 29) + 0.5)

    def forward(self, x, y):
        return torch.softmax(x * self.scale, dim=-1) * y


def get_inputs():
    return [torch.randn(4, 6, 5, 29), torch.randn(4, 6, 5, 29)]


def get_input_variants():
    return [[torch.randn(4, 6, 29, 5).transpose(-1, -2), torch.randn(29, 5, 6, 4).permute(3, 2, 1, 0)],
            [torch.randn(4, 6, 5, 29), torch.randn(1, 6, 5, 29).expand(4, 6, 5, 29)]]
''',
    # Five dims: the leading ones merged (on contiguous copies) before the strides are read.
    "five_dims": '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 1, 5, 7))

    def forward(self, x):
        return (x * self.w).sum(dim=-1) * 0.5


def get_inputs():
    return [torch.randn(2, 3, 4, 5, 7)]


def get_input_variants():
    return [[torch.randn(7, 5, 4, 3, 2).permute(4, 3, 2, 1, 0)]]
''',
}


def _solve(tmp_path: Path, name: str, body: str) -> tuple[Path, str]:
    problem = tmp_path / f"{name}.py"
    problem.write_text(_HEADER + body.lstrip("\n") + "\n\ndef get_init_inputs():\n    return []\n")
    source = propose(load_problem(problem), "triton", limit=1).variants[0].source
    return problem, source


def _judge(tmp_path: Path, name: str, platform: str = "cpu", pool: WorkerPool | None = None) -> None:
    problem, source = _solve(tmp_path, name, PROBLEMS[name])
    assert "_s3, mask=mask" in source, "the reduction reads its operands at their strides"
    assert "_dense(" not in source, "no operand is laid out in the reduced operand's shape"
    solution = tmp_path / f"{name}_solution.py"
    solution.write_text(source)
    verdict = evaluate(problem, solution, fast_options(platform=platform, language="triton", trials=1), pool=pool)
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_operands_broadcast_in_full_are_read_at_their_strides_and_the_answer_is_right(tmp_path: Path,
                                                                                     name: str) -> None:
    _judge(tmp_path, name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_strided_reads_compile_and_are_right_on_the_gpu(tmp_path: Path, name: str, pool: WorkerPool) -> None:
    _judge(tmp_path, name, platform="cuda", pool=pool)


def test_a_reduction_over_a_middle_dim_and_one_with_a_fast_path_keep_their_own_reads(tmp_path: Path) -> None:
    middle = PROBLEMS["five_dims"].replace("sum(dim=-1)", "sum(dim=2)")
    contiguous = PROBLEMS["softmax_times_input"].replace("torch.rand(6, 1, 29)", "torch.rand(29)").replace(
        "torch.softmax(x * self.scale, dim=-1) * y", "torch.softmax(x * self.scale, dim=-1) * 2.0")
    for name, body in [("middle", middle), ("contiguous", contiguous)]:
        _, source = _solve(tmp_path, name, body)
        assert "_s3, mask=mask" not in source, name
