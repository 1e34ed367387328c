"""The staged pipeline's knowledge for the new targets: retrieved for a stage, and checking a candidate's source
against the device named, so a broken kernel is stopped before it reaches the hardware."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from kforge.pipelines.stage_knowledge import KnowledgeAccess

EXAMPLES = Path(str(resources.files("kforge").joinpath("data/examples")))
PROBLEM = (EXAMPLES / "cuda" / "cuda" / "problem.py").read_text()


def access(platform: str, language: str, device: str | None) -> KnowledgeAccess:
    return KnowledgeAccess.load(platform, language, device, PROBLEM, token_budget=4000)


def broken(platform: str, language: str, old: str, new: str) -> str:
    source = (EXAMPLES / platform / language / "solution.py").read_text()
    assert old in source
    return source.replace(old, new)


@pytest.mark.parametrize(("platform", "language", "device", "old", "new", "constraint"), [
    ("mps", "metal", None, "uint i [[thread_position_in_grid]]) {",
     "uint i [[thread_position_in_grid]]) {\n    threadgroup float tile[16384];", "metal-threadgroup-memory"),
    ("xpu", "triton", "Intel(R) Data Center GPU Max 1550", 'grf_mode="default"', "grf_mode=256", "xpu-grf-mode"),
    ("xpu", "sycl", "Intel(R) Arc(TM) A770 Graphics", "const int64_t group = 256;", "const int64_t group = 2048;",
     "sycl-work-group"),
    ("rocm", "hip", "AMD Instinct MI300X", "const int threads = 256;", "const int threads = 2048;",
     "hip-threads-per-block"),
    ("rocm", "triton", "AMD Instinct MI300X", "num_warps=4", "num_warps=32", "rocm-triton-num-warps"),
])
def test_a_broken_example_is_stopped_by_its_targets_constraint(platform: str, language: str, device: str | None,
                                                               old: str, new: str, constraint: str) -> None:
    knowledge = access(platform, language, device)
    example = (EXAMPLES / platform / language / "solution.py").read_text()
    assert [v for v in knowledge.check(example) if v.severity == "error"] == []
    errors = [v for v in knowledge.check(broken(platform, language, old, new)) if v.severity == "error"]
    assert errors and {v.constraint_id for v in errors} == {constraint}


@pytest.mark.parametrize(("platform", "language", "expected"), [
    ("rocm", "triton", "rocm-wavefront-64"), ("rocm", "hip", "hip-wavefront-width"),
    ("xpu", "sycl", "sycl-current-queue"), ("mps", "metal", "metal-threads-per-threadgroup"),
])
def test_each_stage_prompt_carries_the_targets_constraints(platform: str, language: str, expected: str) -> None:
    retrieval = access(platform, language, None).retrieve("device_tuning")
    assert expected in retrieval.entry_ids and retrieval.omitted == []
