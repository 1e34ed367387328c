"""Layers' modes (engine/modes.py): a generated ModelNew follows `.train()` and `.eval()` as the reference does.

A batch norm built in training mode normalizes with the batch's statistics and moves its running statistics; after
`.eval()` it normalizes with those; after `.train()` again it moves them on. The generated module is run beside the
reference through such a sequence (Triton's interpreter; C++ once, its one extension built here), outputs and buffers
compared after every call; the same from a module built in evaluation mode. Modes it has no kernels for are refused
in one line: some layers switched and others not, or a mode the engine could not lower (dropout in training mode).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from kforge.engine import modes
from kforge.engine.propose import propose
from kforge.problem import Problem, load_problem, seed_everything
from tests.conftest import PROBLEMS

ROOT = Path(__file__).resolve().parents[2]
TRAINING_BUILT = PROBLEMS / "engine" / "graph_batchnorm2d_train.py"

# Built in evaluation mode; a cumulative average (momentum None) once switched to training mode.
EVALUATION_BUILT = '''"""Batch norm built in evaluation mode (non-trivial running statistics), then SiLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, momentum=None)
        with torch.no_grad():
            self.norm.running_mean.copy_(torch.randn(channels) * 0.5)
            self.norm.running_var.copy_(torch.rand(channels) * 2.0 + 0.5)
            self.norm.weight.copy_(torch.rand(channels) + 0.5)
            self.norm.bias.copy_(torch.randn(channels) * 0.2)
            self.norm.num_batches_tracked.fill_(4)
        self.eval()

    def forward(self, x):
        return F.silu(self.norm(x))


def get_inputs():
    return [torch.randn(4, 3, 5, 6) * 2.0 + 1.0]


def get_input_variants():
    return [[torch.randn(2, 3, 7, 4)]]


def get_init_inputs():
    return [3]
'''

# Dropout is identity in evaluation mode; in training mode it draws random numbers, which the engine never lowers.
DROPOUT = '''"""A linear layer then dropout, built in evaluation mode."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)
        self.drop = nn.Dropout(0.5)
        self.eval()

    def forward(self, x):
        return self.drop(self.linear(x))


def get_inputs():
    return [torch.randn(3, 8)]


def get_init_inputs():
    return []
'''


def _written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def _generated(problem: Problem, language: str, folder: Path) -> Any:
    """The engine's first candidate, imported in this process (the engine's own file, never a candidate's)."""
    source = propose(problem, language, limit=1).variants[0].source
    path = folder / f"generated_{language}.py"  # Triton reads a kernel's source from its file
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kforge_test_modes_{language}_{folder.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pair(problem: Problem, module: Any) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The reference and the generated module, each built after the same seed (as the harness builds them)."""
    seed_everything(0)
    reference = problem.model_class(*problem.init_inputs())
    seed_everything(0)
    return reference, module.ModelNew(*problem.init_inputs())


def _follows(problem: Problem, reference: torch.nn.Module, generated: torch.nn.Module, calls: int = 2) -> None:
    """`calls` calls of each on the same inputs: the same outputs, and afterwards the same buffers."""
    for seed in range(calls):
        inputs = problem.inputs(seed)
        with torch.no_grad():
            torch.testing.assert_close(generated(*inputs), reference(*inputs), rtol=1e-3, atol=1e-4)
    held = dict(generated.named_buffers())
    for name, buffer in reference.named_buffers():
        torch.testing.assert_close(held[f"reference.{name}"], buffer, rtol=1e-3, atol=1e-4)


def through_the_modes(problem_path: str, language: str, folder: str) -> None:
    """As built, then switched, then switched back, beside the reference; then one layer alone switched, which is
    refused. Run in a child process for Triton (`_in_child`)."""
    problem = load_problem(Path(problem_path))
    reference, generated = _pair(problem, _generated(problem, language, Path(folder)))
    built = reference.training
    assert all(layer.training == built for layer in generated.reference.modules())
    _follows(problem, reference, generated)
    for training in (not built, built):
        reference.train(training)
        generated.train(training)
        _follows(problem, reference, generated)
    generated.reference.norm.train(not built)
    with pytest.raises(RuntimeError, match=r"some are switched and others not: call \.train"):
        generated(*problem.inputs(0))


def dropout_refused(problem_path: str, folder: str) -> None:
    problem = load_problem(Path(problem_path))
    reference, generated = _pair(problem, _generated(problem, "triton", Path(folder)))
    _follows(problem, reference, generated)
    generated.train()
    with pytest.raises(RuntimeError, match=r"evaluation mode only \(the engine wrote no kernels for the other mode: "
                                           r"cannot lower aten\.dropout"):
        generated(*problem.inputs(0))


def _in_child(check: str, *arguments: str) -> None:
    """`check(*arguments)` of this module in a fresh Python whose Triton runs kernels in its interpreter: the switch
    is read when triton is first imported, as the cpu platform's workers set it."""
    pytest.importorskip("triton", reason="Triton is not installed")
    script = f"import sys; from tests.engine.test_modes import {check}; {check}(*sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-4000:]


def test_a_layers_modes_and_their_description() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert modes.layer_modes(model) == (True, True, True)
    assert modes.described(modes.layer_modes(model.eval())) == "evaluation mode"
    model[1].train()
    assert modes.described(modes.layer_modes(model)) == "the modes Model(*get_init_inputs()) leaves them in"


def test_a_reference_that_computes_alike_in_both_modes_gets_the_plain_file() -> None:
    source = propose(load_problem(PROBLEMS / "engine" / "linear_gelu.py"), "triton", limit=1).variants[0].source
    assert "_MODES" not in source and "class ModelNew(nn.Module)" in source


def test_a_batch_norm_built_in_training_mode_follows_eval_and_train_in_triton(tmp_path: Path) -> None:
    found = propose(load_problem(TRAINING_BUILT), "triton", limit=1)
    assert found.program.notes[-1] == "follows the layers' modes: training mode or evaluation mode, picked on each call"
    _in_child("through_the_modes", str(TRAINING_BUILT), "triton", str(tmp_path))


def test_a_batch_norm_built_in_evaluation_mode_follows_train_and_eval_in_triton(tmp_path: Path) -> None:
    _in_child("through_the_modes", str(_written(tmp_path, "evaluation_built", EVALUATION_BUILT)), "triton",
              str(tmp_path))


@pytest.mark.slow
def test_a_batch_norm_follows_eval_and_train_in_cpp_from_one_extension(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    source = propose(load_problem(TRAINING_BUILT), "cpp", limit=1).variants[0].source
    assert source.count("load_inline(") == 1  # both modes' kernels in one extension: one build
    through_the_modes(str(TRAINING_BUILT), "cpp", str(tmp_path))


def test_a_mode_the_engine_cannot_lower_is_refused_with_its_reason(tmp_path: Path) -> None:
    problem = _written(tmp_path, "dropout", DROPOUT)
    found = propose(load_problem(problem), "triton", limit=1)
    assert found.program.notes[-1].startswith("follows the layers' modes: evaluation mode; refuses the other")
    _in_child("dropout_refused", str(problem), str(tmp_path))
