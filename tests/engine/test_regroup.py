"""Graph rewrites before partitioning (`engine/regroup.py`): each keeps the values and changes the kernels.

Every rule is checked the same two ways: the rewritten program computes what the original computes (the IR's
torch interpreter, random inputs, NaN where it matters), and it has the form the rule promises (or is left alone
where the rule's conditions fail). The end-to-end cases are real suite problems: their cut, and their kernels
judged by the harness in C++ and in Triton's CPU interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import capture
from kforge.engine.partition import partition
from kforge.engine.propose import propose
from kforge.engine.regroup import commute_monotone, hoist_view, regroup, sink_view, split_long_reduction
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

SUITE = Path(__file__).resolve().parents[2] / "benchmarks" / "engine_suite"


def _node(name: str, op: str, args: tuple[ir.Arg, ...], result: ir.Shape, dtype: str = "float32",
          **attrs: object) -> ir.Node:
    return ir.Node(name, op, args, result, dtype, ir.make_attrs(**attrs))


def _program(inputs: list[tuple[str, ir.Shape]], nodes: list[ir.Node], dtype: str = "float32") -> ir.Program:
    return ir.Program(inputs=tuple(ir.TensorSpec(name, shape, dtype) for name, shape in inputs), params=(),
                      nodes=tuple(nodes), outputs=(nodes[-1].name,))


def _same_values(before: ir.Program, after: ir.Program, inputs: list[torch.Tensor], atol: float = 1e-5) -> None:
    [expected] = ir.evaluate(before, inputs, {})
    [got] = ir.evaluate(after, inputs, {})
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=atol, equal_nan=True)


def _ops(program: ir.Program) -> list[str]:
    return [node.op for node in program.nodes]


# ---- split_long_reduction ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "logsumexp"])
@pytest.mark.parametrize("shape, dim", [((3, 16384), 1), ((2, 8192, 3), 1), ((32768,), 0)])
def test_a_long_reduction_of_few_rows_is_two_reductions_with_the_same_result(op: str, shape: ir.Shape,
                                                                               dim: int) -> None:
    reduced = tuple(1 if d == dim else n for d, n in enumerate(shape))
    program = _program([("x", shape)], [_node("r", op, ("x",), reduced, dim=dim, keepdim=True)])
    split = split_long_reduction(program)
    assert split is not None
    assert _ops(split) == ["view", op, op, "view"]
    first, second = split.nodes[1], split.nodes[2]
    assert first.attr("dim") == dim + 1 and second.attr("dim") == dim
    assert split.nodes[0].shape[dim] * split.nodes[0].shape[dim + 1] == shape[dim]
    x = torch.randn(shape) * 4
    # Added up in another order, a float32 sum of n values may differ by up to n roundings of the largest (a
    # sum near zero has no relative accuracy to keep): about 0.25 here, where a lost or doubled part would be
    # off by hundreds.
    atol = 8 * shape[dim] * torch.finfo(torch.float32).eps * float(x.abs().amax())
    _same_values(program, split, [x], atol=atol)


def test_a_reduction_without_keepdim_keeps_its_result_shape() -> None:
    program = _program([("x", (4, 8192))], [_node("r", "sum", ("x",), (4,), dim=1, keepdim=False)])
    split = split_long_reduction(program)
    assert split is not None and split.nodes[-1].shape == (4,)
    _same_values(program, split, [torch.randn(4, 8192)], atol=8 * 8192 * torch.finfo(torch.float32).eps * 5)


@pytest.mark.parametrize("shape, dim, dtype", [
    ((3, 4096), 1, "float32"),         # rows too short to be worth it
    ((256, 16384), 1, "float32"),      # rows enough already
    ((2, 10007), 1, "float32"),        # no part divides the row
    ((3, 16384), 1, "float16"),        # a half-precision partial would round where the one reduction does not
])
def test_a_reduction_is_left_alone_where_splitting_does_not_pay_or_is_not_exact(shape: ir.Shape, dim: int,
                                                                                 dtype: str) -> None:
    reduced = tuple(1 if d == dim else n for d, n in enumerate(shape))
    program = _program([("x", shape)], [_node("r", "sum", ("x",), reduced, dtype, dim=dim, keepdim=True)], dtype)
    assert split_long_reduction(program) is None


def test_argmax_is_never_split() -> None:
    program = _program([("x", (2, 16384))], [_node("r", "argmax", ("x",), (2, 1), "int64", dim=1, keepdim=True)])
    assert split_long_reduction(program) is None


# ---- hoist_view ------------------------------------------------------------------------------------------------

def test_a_reshape_of_pointwise_work_on_inputs_reshapes_the_inputs_instead() -> None:
    program = _program([("x", (6, 10)), ("y", (6, 10))], [
        _node("d", "sub", ("x", "y"), (6, 10)),
        _node("p", "pow", ("d", 2.0), (6, 10)),
        _node("flat", "view", ("p",), (60,), shape=(60,)),
        _node("total", "sum", ("flat",), (1,), dim=0, keepdim=True),
    ])
    hoisted = hoist_view(program)
    assert hoisted is not None
    by_name = {node.name: node for node in hoisted.nodes}
    assert by_name["flat"].op == "pow" and by_name["flat"].shape == (60,)
    assert by_name["d"].shape == (60,) and all(by_name[str(a)].op == "view" for a in by_name["d"].args)
    _same_values(program, hoisted, [torch.randn(6, 10), torch.randn(6, 10)])


@pytest.mark.parametrize("case", ["broadcast operand", "second user", "computed operand"])
def test_a_reshape_stays_where_moving_it_would_change_the_work(case: str) -> None:
    y_shape = (10,) if case == "broadcast operand" else (6, 10)
    nodes = [_node("m", "mul", ("x", "y"), (6, 10))]
    if case == "computed operand":  # a GEMM's result: reshaping it would be a step between kernels
        nodes = [_node("g", "linear", ("x", "w"), (6, 10)), _node("m", "mul", ("g", "y"), (6, 10))]
    nodes.append(_node("flat", "view", ("m",), (60,), shape=(60,)))
    if case == "second user":
        nodes.append(_node("other", "add", ("m", 1.0), (6, 10)))
        nodes.append(_node("s", "sum", ("other",), (6, 1), dim=1, keepdim=True))
    program = ir.Program(inputs=(ir.TensorSpec("x", (6, 10)), ir.TensorSpec("y", y_shape)),
                         params=(ir.TensorSpec("w", (10, 10)),), nodes=tuple(nodes),
                         outputs=("flat",) + (("s",) if case == "second user" else ()))
    assert hoist_view(program) is None


def test_an_operand_read_twice_is_reshaped_once() -> None:
    program = _program([("x", (6, 10))], [
        _node("e", "exp", ("x",), (6, 10)),
        _node("sq", "mul", ("e", "e"), (6, 10)),
        _node("flat", "view", ("sq",), (60,), shape=(60,)),
    ])
    hoisted = hoist_view(program)
    assert hoisted is not None and _ops(hoisted) == ["view", "exp", "mul"]
    _same_values(program, hoisted, [torch.randn(6, 10)])


# ---- sink_view -------------------------------------------------------------------------------------------------

def test_a_unary_op_on_a_reshaped_reduction_joins_the_reduction() -> None:
    program = _program([("x", (4, 6, 9))], [
        _node("m", "mean", ("x",), (4, 6, 1), dim=2, keepdim=True),
        _node("v", "view", ("m",), (4, 6), shape=(4, 6)),
        _node("s", "sigmoid", ("v",), (4, 6)),
    ])
    sunk = sink_view(program)
    assert sunk is not None and _ops(sunk) == ["mean", "sigmoid", "view"]
    assert sunk.nodes[1].shape == (4, 6, 1) and sunk.outputs == ("s",)
    _same_values(program, sunk, [torch.randn(4, 6, 9)])


def test_a_reshape_of_a_value_used_elsewhere_or_of_a_slice_stays() -> None:
    used_twice = _program([("x", (4, 9))], [
        _node("m", "amax", ("x",), (4, 1), dim=1, keepdim=True),
        _node("v", "view", ("m",), (4,), shape=(4,)),
        _node("s", "exp", ("v",), (4,)),
        _node("t", "add", ("s", "m"), (4, 4)),
    ])
    assert sink_view(used_twice) is None
    sliced = _program([("x", (4, 9))], [
        _node("m", "amax", ("x",), (4, 1), dim=1, keepdim=True),
        _node("half", "slice", ("m",), (2, 1), dim=0, start=0, stop=2, step=1),
        _node("v", "view", ("half",), (2,), shape=(2,)),
        _node("s", "exp", ("v",), (2,)),
    ])
    assert sink_view(sliced) is None


# ---- commute_monotone -----------------------------------------------------------------------------------------

_POOL = {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1), "dilation": (1, 1), "ceil_mode": False}


@pytest.mark.parametrize("op, args, attrs", [
    ("relu", ("x",), {}), ("sigmoid", ("x",), {}), ("tanh", ("x",), {}), ("clamp", ("x",), {"min": -0.5, "max": 1.0}),
    ("leaky_relu", ("x",), {"negative_slope": 0.2}), ("mul", ("x", 3.0), {}), ("sub", ("x", 0.5), {}),
    ("maximum", (0.25, "x"), {}),
])
def test_a_max_pool_of_a_non_decreasing_function_is_that_function_of_the_pool(op: str, args: tuple[ir.Arg, ...],
                                                                               attrs: dict[str, object]) -> None:
    program = _program([("x", (2, 3, 9, 7))], [
        _node("f", op, args, (2, 3, 9, 7), **attrs),
        _node("pool", "max_pool", ("f",), (2, 3, 5, 4), **_POOL),
    ])
    moved = commute_monotone(program)
    assert moved is not None and _ops(moved) == ["max_pool", op] and moved.outputs == ("pool",)
    x = torch.randn(2, 3, 9, 7)
    x[0, 1, 2, 3] = float("nan")
    _same_values(program, moved, [x])


def test_a_running_max_commutes_too() -> None:
    program = _program([("x", (5, 33))], [_node("f", "exp", ("x",), (5, 33)),
                                          _node("c", "cummax", ("f",), (5, 33), dim=1)])
    moved = commute_monotone(program)
    assert moved is not None and _ops(moved) == ["cummax", "exp"]
    _same_values(program, moved, [torch.randn(5, 33)])


@pytest.mark.parametrize("op, args", [("gelu", ("x",)), ("silu", ("x",)), ("mul", ("x", -2.0)), ("sub", (1.0, "x")),
                                      ("div", (1.0, "x")), ("log", ("x",)), ("neg", ("x",))])
def test_a_function_that_can_decrease_stays_before_the_pool(op: str, args: tuple[ir.Arg, ...]) -> None:
    program = _program([("x", (2, 3, 9, 7))], [
        _node("f", op, args, (2, 3, 9, 7)),
        _node("pool", "max_pool", ("f",), (2, 3, 5, 4), **_POOL),
    ])
    assert commute_monotone(program) is None


# ---- whole problems --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, summary", [
    ("reduce_full_sum_of_product", "mul+sum | sum | view | view"),
    ("reduce_mean_of_squares", "sub+pow+mean | mean | view | view"),
    ("pool_adaptive_avg_global", "mean+sigmoid | view | view"),
    ("pool_max2d_stride_pad", "max_pool+relu"),  # as `plan` allows (C++'s pool kernel takes no epilogue)
])
def test_the_suites_forms_that_cost_kernels_are_regrouped(name: str, summary: str) -> None:
    program = regroup(capture(load_problem(SUITE / f"{name}.py")).program)
    assert partition(program).summary() == summary


def test_a_max_pool_after_relu_is_one_triton_kernel() -> None:
    found = propose(load_problem(SUITE / "pool_max2d_stride_pad.py"), "triton", limit=1)
    assert found.kernels == 1 and "tl.maximum(" in found.variants[0].source


FULL_SUM = '''"""A full sum of a product (two inputs of 2 x 9216, other sizes in the variant)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return (x * y - 0.5).sum()


def get_inputs():
    return [torch.randn(2, 9216), torch.randn(2, 9216)]


def get_input_variants():
    return [[torch.randn(3, 9216), torch.randn(3, 9216)]]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("language", ["cpp", "triton"])
def test_a_split_full_sum_is_correct_on_every_input_set(tmp_path: Path, language: str) -> None:
    if language == "triton":
        pytest.importorskip("triton", reason="Triton is not installed")
    problem = tmp_path / "full_sum.py"
    problem.write_text(FULL_SUM)
    found = propose(load_problem(problem), language, limit=1)
    assert found.kernels >= 2 and any("split into" in note for note in found.program.notes)
    solution = tmp_path / "solution.py"
    solution.write_text(found.variants[0].source)
    verdict = evaluate(problem, solution, fast_options(language=language, trials=2))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{found.variants[0].source}"
