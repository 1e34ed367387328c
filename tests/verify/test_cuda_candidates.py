"""What can be checked of the GPU candidates without a GPU: the static policy's view of each, and that
the ones meant to share a build still do (the GPU suite compiles each shared extension once)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from kforge.problem import load_problem, load_solution
from kforge.verify.ops import reference_ops
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source
from tests.conftest import CANDIDATES, EXAMPLES, PROBLEMS

GPU = CANDIDATES / "gpu_leaky_scale"
# Tricks that only a GPU run can expose; the static policy must let them through to be caught there.
DYNAMIC_ONLY = ["uninitialized_output", "side_stream", "side_stream_when_timed", "unsynchronized_launch",
                "bf16_precision", "illegal_address", "device_assert", "triton_bf16", "triton_illegal_address"]
HONEST = ["cuda_honest", "cuda_vec4", "cuda_joined_stream", "triton_rows"]


@pytest.fixture(scope="module")
def gpu_reference_ops() -> set[str]:
    problem = load_problem(PROBLEMS / "gpu_leaky_scale.py")
    return reference_ops(problem.make_model(0), problem.inputs(0))


@pytest.mark.parametrize("name", HONEST + DYNAMIC_ONLY)
def test_gpu_candidates_pass_the_static_policy(name: str, gpu_reference_ops: set[str]) -> None:
    source = (GPU / f"{name}.py").read_text()
    assert check_source(source, Policy(), gpu_reference_ops) == []


def test_patched_event_timer_is_rejected_statically(gpu_reference_ops: set[str]) -> None:
    violations = check_source((GPU / "patched_event_timer.py").read_text(), Policy(), gpu_reference_ops)
    assert [v.rule for v in violations] == ["static.monkeypatch"]


@pytest.mark.parametrize("solution", sorted(EXAMPLES.glob("*/solution_cuda.py")) + sorted(
    EXAMPLES.glob("*/solution_triton.py")), ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_example_gpu_solutions_pass_the_static_policy(solution: Path) -> None:
    problem = load_problem(solution.parent / "problem.py")
    ops = reference_ops(problem.make_model(0), problem.inputs(0))
    assert check_source(solution.read_text(), Policy(), ops) == []
    expected = "triton" if solution.stem.endswith("triton") else "cuda"
    assert load_solution(solution).language == expected


def test_every_example_has_cuda_and_triton_solutions() -> None:
    for folder in sorted(path.parent for path in EXAMPLES.glob("*/problem.py")):
        assert (folder / "solution_cuda.py").is_file() and (folder / "solution_triton.py").is_file(), folder


def _extension_builds(path: Path) -> list[str]:
    """Each load_inline call of a file, as the text of its arguments (constants resolved)."""
    tree = ast.parse(path.read_text())
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets
                 if isinstance(target, ast.Name) and isinstance(node.value, ast.Constant)}
    builds = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_inline":
            arguments = {kw.arg: constants.get(kw.value.id, "") if isinstance(kw.value, ast.Name)
                         else ast.unparse(kw.value) for kw in node.keywords}
            builds.append(repr(sorted(arguments.items())))
    return builds


def test_gpu_candidates_share_two_builds() -> None:
    builds: dict[str, set[Path]] = defaultdict(set)
    for path in GPU.glob("*.py"):
        for build in _extension_builds(path):
            builds[build].add(path.name)
    assert len(builds) == 2, {build[:120]: sorted(files) for build, files in builds.items()}
