"""The IR: validation of names and ops, and the torch interpreter on the docstring's example."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from kforge.engine import ir


def linear_program() -> ir.Program:
    return ir.Program(
        inputs=(ir.TensorSpec("x", (8, 16)),),
        params=(ir.TensorSpec("lin.weight", (32, 16)), ir.TensorSpec("lin.bias", (32,))),
        heavy=ir.Node("mm", "linear", ("x", "lin.weight", "lin.bias"), (8, 32)),
        nodes=(ir.Node("act", "gelu_tanh", ("mm",), (8, 32)), ir.Node("out", "mul", ("act", 0.5), (8, 32))),
        outputs=("out",),
    )


def test_evaluate_runs_the_docstring_example() -> None:
    x, w, b = torch.randn(8, 16), torch.randn(32, 16), torch.randn(32)
    [y] = ir.evaluate(linear_program(), [x], {"lin.weight": w, "lin.bias": b})
    torch.testing.assert_close(y, F.gelu(x @ w.T + b, approximate="tanh") * 0.5)


def test_a_value_used_before_it_is_defined_is_refused() -> None:
    with pytest.raises(ir.IRError, match="before it is defined"):
        ir.Program(inputs=(ir.TensorSpec("x", (2,)),), params=(),
                   nodes=(ir.Node("a", "exp", ("b",), (2,)), ir.Node("b", "exp", ("x",), (2,))), outputs=("a",))


def test_unknown_ops_and_heavy_ops_beside_program_heavy_are_refused() -> None:
    with pytest.raises(ir.IRError, match="unknown op"):
        ir.Program(inputs=(ir.TensorSpec("x", (2,)),), params=(), nodes=(ir.Node("a", "sort", ("x",), (2,)),),
                   outputs=("a",))
    with pytest.raises(ir.IRError, match=r"has no Program\.heavy"):
        ir.Program(inputs=(ir.TensorSpec("x", (2, 2)),), params=(), heavy=ir.Node("h", "matmul", ("x", "x"), (2, 2)),
                   nodes=(ir.Node("a", "matmul", ("h", "x"), (2, 2)),), outputs=("a",))


def test_a_graph_program_holds_its_heavy_ops_among_its_nodes_and_hoists_a_lone_first_one() -> None:
    x = ir.TensorSpec("x", (2, 2))
    two = ir.Program(inputs=(x,), params=(), nodes=(ir.Node("a", "matmul", ("x", "x"), (2, 2)),
                                                     ir.Node("b", "matmul", ("a", "x"), (2, 2))), outputs=("b",))
    assert two.is_graph() and ir.hoist_heavy(two) is two
    one = ir.Program(inputs=(x,), params=(), nodes=(ir.Node("a", "matmul", ("x", "x"), (2, 2)),
                                                     ir.Node("b", "relu", ("a",), (2, 2))), outputs=("b",))
    hoisted = ir.hoist_heavy(one)
    assert hoisted.heavy is not None and hoisted.heavy.name == "a" and [n.name for n in hoisted.nodes] == ["b"]
    assert not hoisted.is_graph()
    late = ir.Program(inputs=(x,), params=(), nodes=(ir.Node("r", "relu", ("x",), (2, 2)),
                                                      ir.Node("a", "matmul", ("r", "x"), (2, 2))), outputs=("a",))
    assert ir.hoist_heavy(late) is late  # its operand is computed: a graph to partition


def test_size_nodes_and_slices_that_end_at_them() -> None:
    program = ir.Program(
        inputs=(ir.TensorSpec("x", (2, 5)), ir.TensorSpec("y", (2, 9))), params=(),
        nodes=(ir.Node("n", "size", ("x",), (), "float64", ir.make_attrs(dim=1)),
               ir.Node("cut", "slice", ("y", "n"), (2, 5), attrs=ir.make_attrs(dim=1, start=0, stop=None, step=1)),
               ir.Node("out", "add", ("cut", "x"), (2, 5))),
        outputs=("out",))
    x, y = torch.randn(2, 5), torch.randn(2, 9)
    [out] = ir.evaluate(program, {"x": x, "y": y}, {})
    torch.testing.assert_close(out, y[:, :5] + x)
