"""The generated memory-bound kernels' shapes of work: a row that fits is read once and held (one pass), a longer
one is walked in blocks; a pointwise chain with no operand indexed by position is one flat block.

Each problem below has input sets that take each path. A recorder standing in for the kernels shows which
path (and launch) each input set took; the harness judges the variants on all of them in Triton's CPU
interpreter. The bandwidth itself is measured on a GPU: `benchmarks/builtin_bench.py --problems
benchmarks/problems/*_h200.py` (docs/builtin.md).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import WorkerPool
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

# Rows of 300 and 9000 fit the default variant's bound (16384): one pass, 9000 with four times the warps (the
# most, 16); rows of 17000 do not: walked in blocks of 1024.
ROWS = HEADER + '''class Model(nn.Module):
    def forward(self, x):
        return {call}


def get_inputs():
    return [torch.randn(20, 300) * 3.0]


def get_input_variants():
    return [[torch.randn(1, 9000) * 3.0], [torch.randn(2, 17000) * 3.0]]


def get_init_inputs():
    return []
'''
ROWS_LAUNCHES = [(True, 512, 4), (True, 16384, 16), (False, 1024, 4)]

# Layer norm over a last dim of static size (its weight's): one pass in the default variant, three passes
# in the variant walking blocks of 128.
NORM = HEADER + '''class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.normal_()

    def forward(self, x):
        return F.relu(self.norm(x * 2.0 + 1.0))


def get_inputs():
    return [torch.randn(6, 300)]


def get_input_variants():
    return [[torch.randn(2, 3, 300)]]


def get_init_inputs():
    return [300]
'''

FLAT = HEADER + '''class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.tensor(1.5))

    def forward(self, x, y):
        return torch.tanh(x * self.gain) * y + 0.5


def get_inputs():
    return [torch.randn(3, 5, 7), torch.randn(3, 5, 7)]


def get_input_variants():
    return [
        [torch.randn(2, 9, 1001), torch.randn(2, 9, 1001)],
        [torch.randn(3, 5, 7), torch.randn(7)],
        [torch.randn(4, 1001), torch.randn(4, 1001)],
    ]


def get_init_inputs():
    return []
'''
FLAT_PATHS = ["flat", "flat", "general", "general"]


class _Recorder:
    """Stands in for a JIT kernel: records each launch's grid and keyword arguments."""

    def __init__(self, log: list[dict[str, Any]]) -> None:
        self.log = log
        self.grid: Any = None

    def __getitem__(self, grid: Any) -> _Recorder:
        self.grid = grid
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.log.append({"grid": self.grid, **kwargs})


def _problem(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def _launches(tmp_path: Path, problem: Path, source: str, kernel: str) -> list[list[dict[str, Any]]]:
    """For each input set of `problem`: the launches of `kernel` the generated forward made (none launched)."""
    import triton

    path = tmp_path / f"{problem.stem}_recorded.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    logs: dict[str, list[dict[str, Any]]] = {}
    for name, value in list(vars(module).items()):
        if isinstance(value, triton.runtime.JITFunction):
            setattr(module, name, _Recorder(logs.setdefault(name, [])))
    loaded = load_problem(problem)
    model = module.ModelNew(*loaded.init_inputs())
    taken = []
    for inputs in loaded.input_sets(0):
        for log in logs.values():
            log.clear()
        model(*inputs)
        taken.append(list(logs.get(kernel, [])))
    return taken


def _judge(problem: Path, source: str, label: str) -> None:
    solution = problem.with_name(f"{problem.stem}_{label}_solution.py")
    solution.write_text(source)
    verdict = evaluate(problem, solution, fast_options(language="triton", trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


def _variants(problem: Path) -> list[tuple[dict[str, Any], str]]:
    return [(variant.config, variant.source) for variant in propose(load_problem(problem), "triton", limit=24).variants]


@pytest.mark.parametrize("call", [
    "torch.softmax(x * 0.5 - 1.0, dim=-1)",  # one exp per element in the held branch
    "torch.log_softmax(x, dim=-1) * 2.0",
    "torch.logsumexp(x + 1.0, dim=-1)",  # a reduced output
    "x.abs().amax(dim=-1, keepdim=True) / 127.0",
])
def test_a_row_that_fits_is_read_once_and_a_longer_one_walked(tmp_path: Path, call: str) -> None:
    problem = _problem(tmp_path, "rows", ROWS.format(call=call))
    [(config, source), *_] = _variants(problem)
    assert config["ROW_MAX"] == 16384 and config["BLOCK_R"] == 1024 and config["TILE"] == 2048
    launches = _launches(tmp_path, problem, source, "_fused")
    assert [(one["ONE_PASS"], one["BLOCK_R"], one["num_warps"]) for [one] in launches] == ROWS_LAUNCHES
    # 4 rows a program held in tiles of 4 x 512 (2048 elements); the long rows walked two at a time.
    assert [one["grid"] for [one] in launches] == [(5,), (1,), (1,)]
    _judge(problem, source, "default")


def test_layer_norm_is_one_pass_when_held_and_three_when_walked(tmp_path: Path) -> None:
    problem = _problem(tmp_path, "norm", NORM)
    found = _variants(problem)
    held = found[0][1]
    [walked] = [source for config, source in found if config["BLOCK_R"] == 128]
    for source, one_pass, label in ((held, True, "held"), (walked, False, "walked")):
        launches = _launches(tmp_path, problem, source, "_fused")
        assert [one["ONE_PASS"] for [one] in launches] == [one_pass, one_pass]
        _judge(problem, source, label)


def test_a_pointwise_chain_indexing_no_operand_by_position_is_one_flat_block(tmp_path: Path) -> None:
    problem = _problem(tmp_path, "flat", FLAT)
    [(config, source), *_] = _variants(problem)
    assert "BLOCK: tl.constexpr" in source and "BLOCK_ROWS" not in source[:source.index("def _fused_strided")]
    fast = _launches(tmp_path, problem, source, "_fused")
    general = _launches(tmp_path, problem, source, "_fused_strided")
    assert ["flat" if f else "general" if g else "-" for f, g in zip(fast, general, strict=True)] == FLAT_PATHS
    # One program per TILE elements (fewer for a small output), on the first grid axis.
    assert [f[0]["grid"] for f in fast if f] == [(1,), (-(-2 * 9 * 1001 // config["TILE"]),)]
    assert [f[0]["BLOCK"] for f in fast if f] == [128, config["TILE"]]
    _judge(problem, source, "default")


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "text"), [("rows", ROWS.format(call="torch.softmax(x * 0.5 - 1.0, dim=-1)")),
                                            ("norm", NORM), ("flat", FLAT)], ids=["rows", "norm", "flat"])
def test_held_walked_and_flat_kernels_compile_and_are_correct_on_the_gpu(tmp_path: Path, name: str, text: str,
                                                                         pool: WorkerPool) -> None:
    # The interpreter checks the arithmetic; only the GPU compiles the kernels (a held row of 16384 at 16 warps).
    problem = _problem(tmp_path, name, text)
    for index, (config, source) in enumerate(_variants(problem)[:3]):
        solution = problem.with_name(f"{name}_{index}_solution.py")
        solution.write_text(source)
        verdict = evaluate(problem, solution, fast_options(platform="cuda", language="triton", trials=1),
                           pool=pool)
        assert verdict.verdict == Outcome.CORRECT, f"{config}: {verdict.reason}"
