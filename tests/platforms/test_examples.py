"""Every platform's single-shot examples: one per language it runs, well formed, accepted by the static policy
and the knowledge base's validators, carried by the generation prompt; on a machine with the device, correct.

What needs the device is marked with the platform's name (conftest.py skips it elsewhere): run
`python -m pytest tests/platforms -m <platform>` on such a machine (docs/platforms.md).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from importlib import resources
from pathlib import Path
from types import ModuleType

import pytest
import torch

from kforge.agents.generator import GenerationAgent, GenerationRequest
from kforge.agents.targets import Target
from kforge.knowledge import DeviceLimits, load_knowledge
from kforge.platforms import platform_class, platform_names
from kforge.platforms.xpu import supports_sycl
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.static_check import check_source
from kforge.verify.verdict import Outcome
from tests.conftest import fast_options

EXAMPLES = Path(str(resources.files("kforge").joinpath("data/examples")))
TARGETS = [(name, language) for name in platform_names() for language in platform_class(name).languages]
NEW_TARGETS = [("mps", "metal"), ("xpu", "triton"), ("xpu", "sycl"), ("rocm", "hip"), ("rocm", "triton")]


def sources(platform: str, language: str) -> tuple[str, str]:
    folder = EXAMPLES / platform / language
    return (folder / "problem.py").read_text(), (folder / "solution.py").read_text()


def init_parameters(tree: ast.Module, class_name: str) -> list[str]:
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return [argument.arg for argument in init.args.args]


def native_strings(solution: str) -> str:
    return "\n".join(node.value for node in ast.walk(ast.parse(solution))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 200)


@pytest.mark.parametrize(("platform", "language"), TARGETS)
def test_every_target_has_a_well_formed_example(platform: str, language: str) -> None:
    problem, solution = sources(platform, language)
    problem_tree, solution_tree = ast.parse(problem), ast.parse(solution)
    defined = {getattr(node, "name", None) for node in problem_tree.body}
    assert {"Model", "get_inputs", "get_init_inputs"} <= defined
    assert init_parameters(solution_tree, "ModelNew") == init_parameters(problem_tree, "Model")
    assert check_source(solution, Policy()) == []


def test_the_new_platforms_each_list_their_languages() -> None:
    expected = set(NEW_TARGETS) if supports_sycl(torch.__version__) else set(NEW_TARGETS) - {("xpu", "sycl")}
    assert expected <= set(TARGETS)


@pytest.mark.parametrize(("platform", "language"), NEW_TARGETS)
def test_examples_pass_their_knowledge_base_unmarked(platform: str, language: str) -> None:
    base = load_knowledge(platform, language)
    assert len(base) > 0, f"no knowledge for {platform}/{language}"
    found = base.check(sources(platform, language)[1], DeviceLimits.defaults(platform))
    assert found == [], found


def test_metal_example_compiles_its_source_at_run_time() -> None:
    solution = sources("mps", "metal")[1]
    assert "torch.mps.compile_shader(" in solution and "load_metallib" not in solution
    metal = native_strings(solution)
    assert re.search(r"kernel void bias_clamp\(", metal) and "[[thread_position_in_grid]]" in metal
    assert "double" not in metal  # Apple GPUs have no double precision


def test_sycl_example_builds_through_sycl_sources_on_the_current_queue() -> None:
    solution = sources("xpu", "sycl")[1]
    assert "sycl_sources=SYCL_SOURCE" in solution and "cuda_sources" not in solution
    assert "c10::xpu::getCurrentXPUStream().queue()" in native_strings(solution)


def test_hip_example_launches_on_pytorchs_stream_in_wavefronts_of_64() -> None:
    solution = sources("rocm", "hip")[1]
    hip = native_strings(solution)
    assert "#include <hip/hip_runtime.h>" in hip and "getCurrentHIPStreamMasqueradingAsCUDA" in hip
    assert re.search(r"<<<\s*blocks,\s*threads,\s*0,\s*stream\s*>>>", hip)
    threads = int(re.search(r"const int threads = (\d+);", hip).group(1))  # type: ignore[union-attr]
    assert threads % 64 == 0


def test_triton_examples_are_shaped_for_their_device() -> None:
    intel, amd = sources("xpu", "triton")[1], sources("rocm", "triton")[1]
    assert 'grf_mode="default"' in intel  # a string, as Intel's backend wants
    warps = int(re.search(r"num_warps=(\d+)", amd).group(1))  # type: ignore[union-attr]
    assert warps * 64 <= 1024  # a work-group of 64-lane wavefronts


@pytest.mark.parametrize(("platform", "language"), NEW_TARGETS)
def test_generation_prompt_carries_the_targets_own_example(platform: str, language: str) -> None:
    agent = GenerationAgent(chat=None, target=Target(platform, language),  # type: ignore[arg-type]
                            problem_source="class Model:\n    pass\n")
    _, user = agent.messages(GenerationRequest(phase="generate"))
    text = "\n".join(part.text for part in user.parts if hasattr(part, "text"))
    assert sources(platform, language)[1].strip() in text
    others = [other for other in NEW_TARGETS if other != (platform, language)]
    assert all(sources(*other)[1].strip() not in text for other in others)


BUILD_LINES = {"metal": "torch.mps.compile_shader", "sycl": "load_inline(sycl_sources=...)",
               "hip": "load_inline(cuda_sources=...)", "cuda": "load_inline", "cpp": "load_inline"}


@pytest.mark.parametrize(("platform", "language"), TARGETS)
def test_the_system_prompt_names_the_device_and_how_its_language_builds(platform: str, language: str) -> None:
    agent = GenerationAgent(chat=None, target=Target(platform, language),  # type: ignore[arg-type]
                            problem_source="class Model:\n    pass\n")
    system, _ = agent.messages(GenerationRequest(phase="generate"))
    text = "\n".join(part.text for part in system.parts if hasattr(part, "text"))
    cls = platform_class(platform)
    assert f"writes {cls.language_titles[language]} kernels for {cls.title}." in text
    line = BUILD_LINES.get(language)
    assert (line in text) if line else ("load_inline" not in text and "compile_shader" not in text)


# ---- on the device --------------------------------------------------------------------------------------------


def import_solution(platform: str, language: str) -> ModuleType:
    path = EXAMPLES / platform / language / "solution.py"
    spec = importlib.util.spec_from_file_location(f"kforge_example_{platform}_{language}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_directly(platform: str, language: str) -> None:
    """The example's ModelNew against the reference on the device, in this process (the harness aside)."""
    namespace: dict[str, object] = {}
    exec(compile(sources(platform, language)[0], "problem.py", "exec"), namespace)
    device = platform_class(platform)().device
    torch.manual_seed(0)
    reference = namespace["Model"](*namespace["get_init_inputs"]()).to(device)  # type: ignore[operator]
    candidate = import_solution(platform, language).ModelNew(*namespace["get_init_inputs"]()).to(device)  # type: ignore[operator]
    candidate.load_state_dict(reference.state_dict())
    x = namespace["get_inputs"]()[0].to(device)  # type: ignore[operator]
    torch.testing.assert_close(candidate(x).cpu(), reference(x).cpu())


def evaluate_on_device(platform: str, language: str) -> None:
    folder = EXAMPLES / platform / language
    verdict = evaluate(folder / "problem.py", folder / "solution.py", fast_options(platform=platform))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    assert verdict.runtime_ms is not None and verdict.runtime_ms > 0


@pytest.mark.mps
def test_metal_example_on_an_apple_gpu() -> None:
    run_directly("mps", "metal")
    evaluate_on_device("mps", "metal")


@pytest.mark.xpu
@pytest.mark.parametrize("language", ["triton", "sycl"])
def test_intel_examples_run_correctly_on_an_intel_gpu(language: str) -> None:
    if language not in platform_class("xpu").languages:
        pytest.skip("this torch's load_inline takes no SYCL sources")
    run_directly("xpu", language)


@pytest.mark.xpu
def test_intel_triton_example_passes_the_harness() -> None:
    evaluate_on_device("xpu", "triton")


@pytest.mark.rocm
@pytest.mark.parametrize("language", ["hip", "triton"])
def test_amd_examples_run_correctly_on_an_amd_gpu(language: str) -> None:
    run_directly("rocm", language)


@pytest.mark.rocm
def test_amd_triton_example_passes_the_harness() -> None:
    evaluate_on_device("rocm", "triton")


@pytest.mark.slow
def test_cpu_triton_example_is_correct_in_the_interpreter() -> None:
    folder = EXAMPLES / "cpu" / "triton"
    verdict = evaluate(folder / "problem.py", folder / "solution.py", fast_options())
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
