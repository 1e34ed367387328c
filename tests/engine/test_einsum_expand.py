"""einsum as permutes, views and one GEMM (engine/einsum.py), expand as a broadcast (or laid out in full where a
non-pointwise op reads it), selu and torch.multiply, captured from `tests/problems/engine/graph_einsum_expand_selu.py`.
Both backends' solutions are judged in test_op_families.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine.einsum import EinsumError, parse
from tests.conftest import PROBLEMS
from tests.engine.judged import assert_program_computes_the_reference, assert_refused

PROBLEM = PROBLEMS / "engine" / "graph_einsum_expand_selu.py"


def test_each_einsum_is_one_gemm_or_none_and_expand_is_laid_out_only_for_the_sum() -> None:
    program = assert_program_computes_the_reference(PROBLEM)
    ops = [node.op for node in program.nodes]
    assert ops.count("matmul") == 2 and ops.count("bmm") == 1  # weight, outer product; attention scores
    assert [node.shape for node in program.nodes if node.op == "fill"] == [(4, 7)]
    assert [node.attr("alpha") for node in program.nodes if node.op == "elu"] == [1.6732632423543772] * 2


@pytest.mark.parametrize(("equation", "letters"), [("ij,jk", (["ij", "jk"], "ik")), ("ba->ab", (["ba"], "ab")),
                                                    ("i,i", (["i", "i"], ""))])
def test_an_equation_without_an_arrow_keeps_the_letters_used_once(equation: str, letters: object) -> None:
    assert parse(equation, equation.count(",") + 1) == letters


@pytest.mark.parametrize("equation", ["ii->i", "...ij,jk->...ik", "ij,jk,kl->il"])
def test_diagonals_ellipses_and_three_operands_are_refused(equation: str) -> None:
    with pytest.raises(EinsumError):
        parse(equation, equation.split("->")[0].count(",") + 1)


def test_a_diagonal_is_refused_in_one_line(tmp_path: Path) -> None:
    assert_refused(PROBLEM, tmp_path, '"i,j->ij", self.scale', '"ii,j->ij", self.proj[:7]',
                   r"cannot lower aten.einsum \(with a repeated letter in one term")
