"""Pulling the solution out of replies written every way models write them."""

from __future__ import annotations

import pytest

from kforge.agents.replies import ReplyError, code_blocks, extract_solution

SOLUTION = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n        return x\n")


def test_fenced_block_with_prose_around_it() -> None:
    reply = f"Sure! Here is a faster version.\n\n```python\n{SOLUTION}```\n\nIt fuses the two loops."
    assert extract_solution(reply) == SOLUTION


def test_unfenced_reply() -> None:
    assert extract_solution(SOLUTION) == SOLUTION
    assert extract_solution("Here you go:\n" + SOLUTION) == SOLUTION


def test_several_blocks_pick_the_python_one_defining_modelnew() -> None:
    reply = ("The kernel:\n```cpp\n__global__ void k() {}\n```\nA sketch:\n```python\nx = 1\n```\n"
             f"The file:\n```python\n{SOLUTION}```\n")
    assert extract_solution(reply) == SOLUTION


def test_last_complete_version_wins() -> None:
    first = SOLUTION.replace("return x", "return x  # draft")
    reply = f"```python\n{first}```\nOn reflection:\n```py\n{SOLUTION}```"
    assert extract_solution(reply) == SOLUTION


def test_tilde_and_long_fences() -> None:
    assert extract_solution(f"~~~python\n{SOLUTION}~~~") == SOLUTION
    assert extract_solution(f"````python\n{SOLUTION}````") == SOLUTION


def test_reply_cut_off_mid_way() -> None:
    cut = f"```python\n{SOLUTION}    def extra(self, y):\n        return (y +"
    with pytest.raises(ReplyError, match="cut off"):
        extract_solution(cut)


def test_cut_off_but_complete_code_is_used() -> None:
    assert extract_solution(f"```python\n{SOLUTION}") == SOLUTION


def test_no_modelnew() -> None:
    with pytest.raises(ReplyError, match="ModelNew"):
        extract_solution("```python\nimport torch\n```")
    with pytest.raises(ReplyError):
        extract_solution("I cannot help with that.")


def test_invalid_python_in_a_closed_block() -> None:
    with pytest.raises(ReplyError, match="not valid Python"):
        extract_solution("```python\nclass ModelNew(:\n    pass\n```")


def test_code_blocks_report_languages_and_closure() -> None:
    blocks = code_blocks("```cpp\nint a;\n```\n```python\nx = 1")
    assert [(b.language, b.closed) for b in blocks] == [("cpp", True), ("python", False)]
