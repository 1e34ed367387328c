"""Capture: each bundled example and each engine test problem lowers to an IR program that computes what the
reference computes (checked with the IR's torch interpreter on fresh random inputs); unsupported operations
are named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
from kforge.problem import load_problem
from tests.conftest import EXAMPLES, PROBLEMS

ENGINE_PROBLEMS = PROBLEMS / "engine"
LOWERABLE = sorted(EXAMPLES.glob("*/problem.py")) + sorted(
    p for p in ENGINE_PROBLEMS.glob("*.py") if "unsupported" not in p.name)


def params_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def assert_same_as_reference(path: Path, program: ir.Program, model: torch.nn.Module, seed: int = 5) -> None:
    problem = load_problem(path)
    for inputs in problem.input_sets(seed)[:1]:
        with torch.no_grad():
            expected = model(*inputs)
            got = ir.evaluate(program, inputs, params_of(model))
        expected = expected if isinstance(expected, (tuple, list)) else [expected]
        for a, b in zip(got, expected, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("path", LOWERABLE, ids=lambda p: p.parent.name if p.name == "problem.py" else p.stem)
def test_capture_keeps_the_reference_semantics(path: Path) -> None:
    captured = capture(load_problem(path))
    assert captured.program.outputs
    assert_same_as_reference(path, captured.program, captured.model)


def test_linear_example_has_one_heavy_op_and_a_pointwise_epilogue() -> None:
    program = capture(load_problem(EXAMPLES / "linear_gelu_tanh" / "problem.py")).program
    assert program.heavy is not None and program.heavy.op == "linear"
    assert program.heavy.args == ("x", "linear.weight", "linear.bias")
    assert [node.op for node in program.nodes] == ["gelu_tanh"]
    assert program.heavy.static == (False, True) or program.heavy.static == (False, False)


def test_sizes_are_captured_as_run_time_values() -> None:
    program = capture(load_problem(EXAMPLES / "logmeanexp_pool" / "problem.py")).program
    sizes = [node for node in program.nodes if node.op == "size"]
    assert len(sizes) == 1 and sizes[0].shape == () and sizes[0].attr("dim") == 1
    # The sequence length differs among the input sets: that dim is not static.
    assert program.inputs[0].static == (False, False, False)


def test_an_unsupported_operation_is_named_in_one_line() -> None:
    with pytest.raises(LoweringError) as caught:
        capture(load_problem(ENGINE_PROBLEMS / "ea_unsupported_sort.py"))
    message = str(caught.value)
    assert message == "builtin engine: cannot lower aten.sort; configure a model with --model"


@pytest.mark.parametrize(("forward", "inputs", "message"), [
    ("return x * idx", "[torch.randn(8, 4), torch.randn(8, 4, dtype=torch.complex64)]",
     "cannot lower the value idx of dtype torch.complex64;"),
    ("return x * 2.0", "[torch.randn(8, 4), 'scale']", "cannot lower the value idx (not a tensor);"),
], ids=["complex_input", "string_argument"])
def test_what_is_no_operation_is_named_without_an_aten_prefix(tmp_path: Path, forward: str, inputs: str,
                                                                message: str) -> None:
    path = tmp_path / "problem.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    f"    def forward(self, x, idx):\n        {forward}\n\n"
                    f"def get_inputs():\n    return {inputs}\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(LoweringError) as caught:
        capture(load_problem(path))
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("forward", "message"), [
    ("return ((x > 0.5) + (x < -0.5)) * x", "cannot lower aten.add (with a boolean result)"),
    ("return torch.where(x > 0.5)[0]", "cannot lower aten.where (with one argument"),
    ("return (x > 0.5).amax(dim=1)", "cannot lower aten.amax (of integers or booleans"),
], ids=["boolean_arithmetic", "where_indices", "boolean_amax"])
def test_booleans_are_lowered_only_as_masks(tmp_path: Path, forward: str, message: str) -> None:
    path = tmp_path / "problem.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    f"    def forward(self, x):\n        {forward}\n\n"
                    "def get_inputs():\n    return [torch.randn(6, 10)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(LoweringError) as caught:
        capture(load_problem(path))
    assert message in str(caught.value)


@pytest.mark.parametrize("forward", [
    "return x.narrow(dim=1, start=2, length=5) * 2.0 + torch.narrow(x, 1, start=0, length=5)",
    "return torch.narrow(input=x, dim=-1, start=1, length=4).relu() + x.narrow(1, 3, length=4)",
], ids=["method_and_function", "all_by_name"])
def test_narrow_with_its_arguments_named_lowers_as_by_position(tmp_path: Path, forward: str) -> None:
    path = tmp_path / "narrow.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    f"    def forward(self, x):\n        {forward}\n\n"
                    "def get_inputs():\n    return [torch.randn(6, 10)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    captured = capture(load_problem(path))
    assert [node.op for node in captured.program.nodes].count("slice") == 2
    assert_same_as_reference(path, captured.program, captured.model)


def test_training_mode_dropout_is_not_lowered(tmp_path: Path) -> None:
    path = tmp_path / "dropout.py"
    path.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                    "    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout(0.5)\n\n"
                    "    def forward(self, x):\n        return self.drop(x) * 2.0\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 8)]\n\n"
                    "def get_init_inputs():\n    return []\n")
    # load_problem refuses it first (its outputs change from call to call); the engine refuses it on its own too.
    with pytest.raises(LoweringError, match=r"cannot lower aten\.dropout"):
        capture(load_problem(path, check_runs=False))
