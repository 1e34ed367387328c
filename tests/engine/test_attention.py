"""Attention as people write it (engine/tracing.py, engine/constants.py, engine/attention.py): masks built in
forward from the sequence length, mask buffers cut to it, `masked_fill`, masked `scaled_dot_product_attention` and
`nn.MultiheadAttention` are captured into the IR's ops and computed as torch computes them; what cannot be
traced or lowered is refused in one line naming the problem file's line.

The problems are `tests/problems/engine/graph_causal_*.py`, `graph_sdpa_masks.py` and `graph_mha_*.py`; their
capture is also checked against the reference by tests/engine/test_capture.py, and their composed Triton
solutions by tests/engine/test_partition.py (Triton's interpreter). The C++ solutions are judged here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kforge.engine import constants, tracing
from kforge.engine.capture import LoweringError, capture
from kforge.engine.propose import propose
from kforge.problem import load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options
from tests.engine.test_capture import assert_same_as_reference

FOLDER = PROBLEMS / "engine"


def _ops(name: str) -> list[str]:
    return [node.op for node in capture(load_problem(FOLDER / f"{name}.py")).program.nodes]


def _write(tmp_path: Path, init: str, forward: str, inputs: str, variants: str = "") -> Path:
    path = tmp_path / "problem.py"
    path.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    f"        {init}\n\n    def forward(self, x):\n{forward}\n\n\n"
                    f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n{variants}")
    return path


@pytest.mark.parametrize("diagonal", [-3, -1, 0, 1, 4])
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_a_triangle_is_found_from_its_kept_part(op: str, diagonal: int) -> None:
    keep = getattr(torch, op)(torch.ones(7, 10, dtype=torch.bool), diagonal)
    found = constants.triangle(keep)
    assert found is not None
    assert torch.equal(getattr(torch, found.op)(torch.ones(7, 10, dtype=torch.bool), found.diagonal), keep)


def test_a_mask_that_is_no_triangle_is_not_taken_for_one() -> None:
    band = torch.tril(torch.ones(6, 6, dtype=torch.bool), 1) & torch.triu(torch.ones(6, 6, dtype=torch.bool), -1)
    assert constants.triangle(band) is None
    assert constants.triangle(torch.ones(6, 6, dtype=torch.bool)) is None


class _Made(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        t = x.size(-1)
        masked = x.masked_fill(torch.tril(torch.ones(t, t)) == 0, 0.0)
        added = x + torch.zeros(t, t).masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return masked + added, x + torch.ones(t, t), torch.zeros(t, t).sum(0)


def test_only_tensors_made_from_sizes_that_end_as_masks_are_folded() -> None:
    """A factory whose every use ends as a mask is computed at capture; one returned, reduced or added as it is
    is left to capture's other lowerings."""
    graph = tracing.trace(_Made())
    factories = [node for node in graph.graph.nodes if node.target in constants.FACTORIES]
    found = [constants.feeds_masks(node, lambda arg: not isinstance(arg, torch.fx.Node) or arg.op != "placeholder")
             for node in factories]
    assert found == [True, True, True, False, False]


def test_a_mask_built_from_the_length_becomes_a_mask_op_not_a_tensor() -> None:
    ops = _ops("graph_causal_ones_mask")
    assert "tril" in ops and "where" not in ops and "eq" not in ops


def test_a_mask_buffer_cut_to_the_length_is_read_in_place() -> None:
    program = capture(load_problem(FOLDER / "graph_causal_buffer_mask.py")).program
    cuts = [node for node in program.nodes if node.op == "slice" and node.args == ("allowed",)]
    assert cuts and cuts[0].attr("stop") == 11  # the traced length, resolved: it is the same on every input set
    assert "where" in [node.op for node in program.nodes]


def test_a_causal_mask_given_to_attention_is_the_fused_causal_kernel() -> None:
    program = capture(load_problem(FOLDER / "graph_sdpa_masks.py")).program
    fused = [node for node in program.nodes if node.op == "attention"]
    assert [node.attr("causal") for node in fused] == [True, True]  # is_causal=True, and the built lower triangle
    assert "where" in [node.op for node in program.nodes]  # the mask passed in: written out


def test_multihead_attention_without_weights_is_one_fused_attention() -> None:
    ops = _ops("graph_mha_batch_first")
    assert ops.count("attention") == 1 and ops.count("linear") == 2  # packed projection, output projection


def test_multihead_attention_weights_are_the_softmax_averaged_over_heads() -> None:
    ops = _ops("graph_mha_sequence_first")
    assert "attention" not in ops and "softmax" in ops and "mean" in ops
    assert ops.count("linear") == 4  # query, key and value apart (the memory is another tensor), and the output


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_layouts_and_weights_match_torch(tmp_path: Path, batch_first: bool,
                                                              average: bool) -> None:
    shape = "(2, 9, 14)" if batch_first else "(9, 2, 14)"
    path = _write(tmp_path, f"self.mha = nn.MultiheadAttention(14, 2, kdim=6, vdim=5, batch_first={batch_first})",
                  f"        return self.mha(x, self.memory(x), self.values(x), average_attn_weights={average})",
                  f"[torch.randn{shape}]")
    text = path.read_text().replace("super().__init__()\n", "super().__init__()\n"
                                    "        self.memory = nn.Linear(14, 6)\n        self.values = nn.Linear(14, 5)\n")
    path.write_text(text)
    captured = capture(load_problem(path))
    assert_same_as_reference(path, captured.program, captured.model)


@pytest.mark.parametrize(("init", "forward", "fused"), [
    ("self.mha = nn.MultiheadAttention(12, 3)",
     "        mask = nn.Transformer.generate_square_subsequent_mask(x.size(0), device=x.device)\n"
     "        return self.mha(x, x, x, attn_mask=mask)[0]", True),
    ("self.register_buffer('bias', torch.randn(1, 1, 16, 16))",
     "        t = x.size(-2)\n        return F.scaled_dot_product_attention(x, x, x, attn_mask=self.bias[..., :t, :t])",
     False),
    ("pass", "        t = x.shape[-2]\n        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=-2)\n"
     "        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)", False),
    ("pass", "        t = x.shape[-2]\n        mask = torch.ones(t, t).tril().view(1, 1, t, t) == 1\n"
     "        return F.scaled_dot_product_attention(x, x, x, attn_mask=mask)", True),
], ids=["square_subsequent_mask", "float_buffer_mask", "upper_triangle", "viewed_lower_triangle"])
def test_attention_masks_match_torch(tmp_path: Path, init: str, forward: str, fused: bool) -> None:
    path = _write(tmp_path, init, forward, "[torch.randn(7, 2, 12)]" if "mha" in init else "[torch.randn(2, 3, 9, 12)]")
    captured = capture(load_problem(path))
    assert ("attention" in [node.op for node in captured.program.nodes]) == fused
    assert_same_as_reference(path, captured.program, captured.model)


def test_a_trace_that_fails_names_the_problem_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "pass", "        total = x\n        for _ in range(x.shape[0]):\n"
                  "            total = total + x\n        return total", "[torch.randn(3, 5)]")
    line = path.read_text().splitlines().index("        for _ in range(x.shape[0]):") + 1
    with pytest.raises(LoweringError) as caught:
        capture(load_problem(path))
    message = str(caught.value)
    assert message.startswith(f"builtin engine: cannot trace Model.forward at problem.py:{line} (")
    assert "\n" not in message


@pytest.mark.parametrize(("forward", "refusal"), [
    ("        t = x.size(1)\n        band = torch.tril(torch.ones(t, t), 1) * torch.triu(torch.ones(t, t), -1)\n"
     "        return x.masked_fill(band == 0, float('-inf'))", "where (of a mask made in forward that is no triangle)"),
    ("        return self.mha(x, x, x, key_padding_mask=x[:, :, 0] > 0)[0]", "multihead_attention (with a key padding"),
], ids=["band_mask", "key_padding_mask"])
def test_what_is_not_lowered_is_named(tmp_path: Path, forward: str, refusal: str) -> None:
    path = _write(tmp_path, "self.mha = nn.MultiheadAttention(8, 2, batch_first=True)", forward,
                  "[torch.randn(2, 8, 8)]")
    with pytest.raises(LoweringError, match="cannot lower aten." + refusal.replace("(", r"\(").replace(")", r"\)")):
        capture(load_problem(path))


def test_a_mask_from_a_length_that_varies_is_refused(tmp_path: Path) -> None:
    variants = "\n\ndef get_input_variants():\n    return [[torch.randn(3, 6, 6)]]\n"
    path = _write(tmp_path, "pass", "        t = x.size(-1)\n        mask = torch.tril(torch.ones(t, t))\n"
                  "        return x.masked_fill(mask == 0, 0.0)", "[torch.randn(2, 5, 5)]", variants)
    with pytest.raises(LoweringError, match=r"cannot lower aten.ones \(of a size that varies between input sets\)"):
        capture(load_problem(path))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["graph_causal_ones_mask", "graph_causal_buffer_mask", "graph_causal_mask_forms",
                                  "graph_sdpa_masks", "graph_mha_batch_first", "graph_mha_sequence_first"])
def test_the_cpp_solution_is_correct(tmp_path: Path, name: str) -> None:
    found = propose(load_problem(FOLDER / f"{name}.py"), "cpp", limit=1)
    path = tmp_path / "solution.py"
    path.write_text(found.variants[0].source)
    verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{found.variants[0].source}"
