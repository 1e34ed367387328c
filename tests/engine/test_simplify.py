"""Each simplification rule: it applies where its docstring says, and the program computes the same values
before and after (ir.evaluate on random inputs)."""

from __future__ import annotations

from pathlib import Path

import torch

from kforge.engine import ir, simplify
from kforge.engine.capture import capture
from kforge.problem import load_problem
from tests.conftest import PROBLEMS
from tests.engine.judged import assert_default_solution_correct

ENGINE_PROBLEMS = PROBLEMS / "engine"


def same_values(before: ir.Program, after: ir.Program, params: dict[str, torch.Tensor] | None = None,
                scale: float = 1.0, inputs: list[torch.Tensor] | None = None) -> None:
    torch.manual_seed(0)
    inputs = inputs or [torch.randn(spec.shape) * scale for spec in before.inputs]
    params = params or {spec.name: torch.randn(spec.shape) for spec in before.params}
    for a, b in zip(ir.evaluate(before, inputs, params), ir.evaluate(after, inputs, params), strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def node(name: str, op: str, args: tuple[ir.Arg, ...], shape: tuple[int, ...], **attrs: object) -> ir.Node:
    return ir.Node(name, op, args, shape, attrs=ir.make_attrs(**attrs))


def program(nodes: tuple[ir.Node, ...], shape: tuple[int, ...] = (6, 1, 5), **fields: object) -> ir.Program:
    base = {"inputs": (ir.TensorSpec("x", shape),), "params": (), "nodes": nodes, "outputs": (nodes[-1].name,)}
    base.update(fields)
    return ir.Program(**base)  # type: ignore[arg-type]


def test_a_reduction_over_a_size_one_dim_is_the_identity() -> None:
    before = program((node("s", "sum", ("x",), (6, 1, 5), dim=1, keepdim=True),
                      node("m", "amax", ("x",), (6, 5), dim=1, keepdim=False),
                      node("out", "mul", ("s", "m"), (6, 6, 5))))
    after = simplify.simplify(before)
    assert [n.op for n in after.nodes] == ["view", "mul"]
    assert after.nodes[1].args == ("x", "m")
    same_values(before, after)


def test_a_reduction_over_a_varying_dim_of_size_one_is_kept() -> None:
    spec = ir.TensorSpec("x", (6, 1, 5), static=(True, False, True))
    before = program((node("s", "sum", ("x",), (6, 1, 5), dim=1, keepdim=True),), inputs=(spec,))
    assert simplify.size_one_reduction(before) is None


def test_a_size_one_reduction_that_is_the_output_keeps_its_name(tmp_path: Path) -> None:
    # A composed forward reads each kernel's value by its output's name: renaming it to the kernel's input left
    # the next kernel reading a variable never assigned (a mean of per-item losses of shape (N, 1) did).
    before = program((node("s", "sum", ("x",), (6, 1, 5), dim=1, keepdim=True),))
    assert simplify.size_one_reduction(before) is None
    assert_default_solution_correct(ENGINE_PROBLEMS / "graph_size_one_sums.py", tmp_path, "triton")


def test_the_sum_of_a_linear_layer_becomes_a_matrix_vector_product() -> None:
    params = (ir.TensorSpec("lin.weight", (12, 7)), ir.TensorSpec("lin.bias", (12,)))
    heavy = ir.Node("h", "linear", ("x", "lin.weight", "lin.bias"), (9, 12))
    for op, keepdim in (("sum", False), ("mean", True)):
        shape = (9, 1) if keepdim else (9,)
        before = ir.Program(inputs=(ir.TensorSpec("x", (9, 7)),), params=params, heavy=heavy,
                            nodes=(node("r", op, ("h",), shape, dim=1, keepdim=keepdim),
                                   node("out", "exp", ("r",), shape)), outputs=("out",))
        after = simplify.simplify(before)
        assert after.heavy is not None and after.heavy.shape == (9, 1)
        assert [p.op for p in after.prepared] == [op, op]
        assert all(n.op not in ir.REDUCE_OPS for n in after.nodes)
        same_values(before, after)


def test_a_chain_of_constant_steps_folds_into_one_multiply_add() -> None:
    before = program((node("a", "div", ("x", 0.7), (6, 1, 5)), node("b", "mul", (2.0, "a"), (6, 1, 5)),
                      node("c", "sub", ("b", 1.5), (6, 1, 5)), node("d", "sub", (3.0, "c"), (6, 1, 5)),
                      node("out", "exp", ("d",), (6, 1, 5))))
    after = simplify.simplify(before)
    assert [n.op for n in after.nodes] == ["mul", "add", "exp"]
    same_values(before, after)


def test_a_value_used_twice_is_not_folded_away() -> None:
    before = program((node("a", "mul", ("x", 3.0), (6, 1, 5)), node("b", "mul", ("a", 2.0), (6, 1, 5)),
                      node("out", "add", ("a", "b"), (6, 1, 5))))
    assert simplify.fold_scalar_chain(before) is None


def test_back_to_back_clamps_merge() -> None:
    before = program((node("a", "relu", ("x",), (6, 1, 5)), node("b", "minimum", ("a", 0.8), (6, 1, 5)),
                      node("out", "clamp", ("b",), (6, 1, 5), min=-1.0, max=0.5)))
    after = simplify.simplify(before)
    assert [(n.op, n.attr("min"), n.attr("max")) for n in after.nodes] == [("clamp", 0.0, 0.5)]
    same_values(before, after, scale=3.0)


def test_clamps_whose_intervals_do_not_meet_are_not_merged() -> None:
    before = program((node("a", "clamp", ("x",), (6, 1, 5), min=0.0, max=1.0),
                      node("out", "clamp", ("a",), (6, 1, 5), min=2.0, max=3.0)))
    assert simplify.merge_clamps(before) is None
    same_values(before, simplify.simplify(before))


def test_provably_constant_results_are_replaced_and_flagged() -> None:
    before = program((node("s", "softmax", ("x",), (6, 1, 5), dim=1), node("d", "sub", ("x", "x"), (6, 1, 5)),
                      node("out", "add", ("s", "d"), (6, 1, 5))))
    after = simplify.simplify(before)
    assert after.degenerate is not None and "always 1" in after.degenerate and "always 0" in after.degenerate
    assert all(n.op in ("clamp", "add") for n in after.nodes)
    same_values(before, after)


def test_engine_problems_keep_their_values_through_simplification() -> None:
    for path in sorted(ENGINE_PROBLEMS.glob("*.py")):
        if "unsupported" in path.name:
            continue
        problem = load_problem(path)
        captured = capture(problem)
        params = {**dict(captured.model.named_parameters()), **dict(captured.model.named_buffers())}
        with torch.no_grad():
            same_values(captured.program, simplify.simplify(captured.program),
                        params={k: v.detach() for k, v in params.items()}, inputs=problem.inputs(seed=3))
