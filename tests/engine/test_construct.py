"""The reference's constructor copied into generated solutions: same parameters, no computation, no banned imports."""

from __future__ import annotations

import ast

import torch

from kforge.engine.construct import REFERENCE_CLASS, param_expression, reference_source
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source

PROBLEM = '''
"""A reference with a helper module, constants and an import a candidate may not use."""
import math

import numpy as np
import torch
import torch.nn as nn

HIDDEN = 6
TABLE = np.arange(3)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(width))

    def forward(self, x):
        return torch.softmax(x * self.scale, dim=-1)


class Model(nn.Module):
    """The model."""

    def __init__(self, features):
        super(Model, self).__init__()
        self.proj = nn.Linear(features, HIDDEN)
        self.blocks = nn.ModuleList([Block(HIDDEN), Block(HIDDEN)])
        self.register_buffer("offset", torch.randn(HIDDEN) * math.sqrt(2.0))

    def forward(self, x):
        return self.blocks[1](self.blocks[0](self.proj(x))) + self.offset


def get_inputs():
    return [torch.randn(2, 4)]


def get_init_inputs():
    return [4]
'''


def _build(source: str, *args: object) -> torch.nn.Module:
    namespace: dict[str, object] = {}
    exec(compile(source, "<reference>", "exec"), namespace)  # our own copy of a test problem, not a candidate
    cls = namespace[REFERENCE_CLASS]
    assert isinstance(cls, type)
    return cls(*args)


def test_the_copy_builds_the_same_parameters_from_the_same_seed() -> None:
    namespace: dict[str, object] = {}
    exec(compile(PROBLEM, "<problem>", "exec"), namespace)
    torch.manual_seed(3)
    model = namespace["Model"](4)  # type: ignore[operator]
    torch.manual_seed(3)
    copy = _build(reference_source(PROBLEM), 4)
    original = dict(model.state_dict())
    copied = dict(copy.state_dict())
    assert original.keys() == copied.keys()
    for name, value in original.items():
        assert torch.equal(value, copied[name]), name


def test_the_copy_has_constructors_only_and_passes_the_static_check() -> None:
    source = reference_source(PROBLEM)
    tree = ast.parse(source)
    methods = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert methods == {"__init__"}
    assert "numpy" not in source and "TABLE" not in source, "banned imports and what they build are dropped"
    assert "HIDDEN = 6" in source and f"super({REFERENCE_CLASS}, self)" in source
    reference_ops = {"aten::softmax", "aten::addmm", "aten::mul", "aten::add"}
    assert check_source(source, Policy(), reference_ops) == []


def test_parameters_are_read_through_their_modules() -> None:
    assert param_expression("proj.weight") == "self.reference.proj.weight"
    assert param_expression("blocks.1.scale") == "self.reference.blocks[1].scale"
