"""The C++ half of no delegation (issue 38): ATen and torch names in a candidate's C++ are checked against an
allowlist (policy.toml [cpp_framework]), whatever their namespace, since kernels beneath the dispatcher
(`at::cpu::_softmax`) are invisible to the dynamic check. Every honest C++ source the project has must pass."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kforge.problem import load_problem
from kforge.verify.cpp_names import code_only
from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy, policy_rules
from kforge.verify.static_check import check_source
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, PROBLEMS, fast_options

ROOT = Path(__file__).resolve().parents[2]
RULE = "static.cpp-framework-call"
HEADER = "import torch\nfrom torch.utils.cpp_extension import load_inline\n"


def cpp_rules(cpp: str, policy: Policy | None = None) -> set[str]:
    """The rules a candidate whose C++ source is `cpp` breaks (no reference operators: only C++ rules fire)."""
    source = HEADER + f"CPP = r'''\n#include <torch/extension.h>\n{textwrap.dedent(cpp)}\n'''\n"
    return {v.rule for v in check_source(source, policy or Policy(), set())}


def messages(cpp: str) -> str:
    source = HEADER + f"CPP = r'''\n{cpp}\n'''\n"
    return " ".join(v.message for v in check_source(source, Policy(), set()))


@pytest.mark.parametrize("cpp", [
    "torch::Tensor f(torch::Tensor x) { return at::cpu::_softmax(x, 1, false); }",
    "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::native::mm(a, b); }",
    "torch::Tensor f(torch::Tensor c, torch::Tensor a, torch::Tensor b) { return at::_ops::addmm::call(c, a, b, 1, 1); "
    "}",
    "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return torch::matmul(a, b); }",
    "torch::Tensor f(torch::Tensor x) { return x.sum(); }",
    "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return a.matmul(b); }",
    "torch::Tensor f(torch::Tensor x) { return x->sum(); }",
    "torch::Tensor f(torch::Tensor x) { return ::at :: cpu :: _softmax(x, 1, false); }",  # spaces, global ::
    "auto kernel = &at::cpu::_softmax;",  # a pointer: no call parentheses at all
    "auto sum = &at::Tensor::sum;",
    "auto& d = c10::Dispatcher::singleton();",
    "torch::Tensor f(torch::Tensor x) { return torch::nn::functional::softmax(x, 1); }",
    "namespace at { Tensor f(const Tensor& x) { return cpu::_softmax(x, 1, false); } }",  # no at:: needed inside
    "using namespace at::native;",
    "using namespace torch;",
    "namespace ops = ::at;",
    "#define KERNELS at\nKERNELS::cpu::_softmax(x, 1, false);",
    "#define BELOW(ns) ns::cpu::_softmax\nBELOW(at)(x, 1, false);",
    "#define CAT(a, b) a##b\nCAT(a, t)::cpu::_softmax(x, 1, false);",
    "int n = 1'0; auto y = at::cpu::_softmax(x, 1, false); int m = 2'0;",  # digit separators hide nothing
    "const char* m = \"a\"; auto y = at::cpu::_softmax(x, 1, false); const char* n = \"b\";",
])
def test_framework_calls_beyond_the_allowlist_are_refused(cpp: str) -> None:
    assert RULE in cpp_rules(cpp)


def test_the_message_names_what_was_called() -> None:
    text = messages("torch::Tensor f(torch::Tensor x) { return at::cpu::_softmax(x, 1, false).sum(); }")
    assert "at::cpu::_softmax" in text and ".sum()" in text and RULE not in text


@pytest.mark.parametrize("cpp", [
    """
    torch::Tensor f(torch::Tensor x, torch::Tensor w) {
        TORCH_CHECK(x.dim() == 2 && x.is_contiguous(), "x: at::matmul would be slower; x.sum() too");
        auto out = torch::empty({x.size(0), w.size(1)}, x.options().dtype(torch::kFloat32));
        auto t = at::zeros_like(out).view({-1}).reshape(out.sizes()).transpose(0, 1).contiguous();
        const float* px = x.data_ptr<float>();
        float* po = out.template mutable_data_ptr<float>();
        at::parallel_for(0, x.size(0), 1, [&](int64_t b, int64_t e) { po[b] = px[e]; });
        std::vector<float> v(8); v.resize(16); float* raw = v.data(); float first = v.at(0);
        return out;  // unlike at::cpu::_softmax or x.sum(), in a comment
    }
    """,
    """
    torch::Tensor f(torch::Tensor x) {
        const c10::cuda::CUDAGuard guard(x.device());
        cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
        auto out = at::empty_like(x, x.options().dtype(at::kFloat));
        AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "f", ([&] {
            kernel<<<1, 1, 0, stream>>>(x.data_ptr<scalar_t>()); }));
        for (size_t at = 0; at < 4; ++at) {}  // a variable called `at` is not the namespace
        return out;
    }
    """,
    "/* R\"(raw)\" */ auto s = R\"kf(at::cpu::_softmax in a raw string)kf\"; auto e = torch::empty({1});",
])
def test_allocation_layout_devices_and_literals_pass(cpp: str) -> None:
    assert cpp_rules(cpp) == set()


def test_the_vendor_gemm_policy_and_allowed_operators_add_their_spellings() -> None:
    gemm = "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::mm(a, b) + torch::linear(a, b).matmul(b); }"
    assert RULE in cpp_rules(gemm)
    assert cpp_rules(gemm, Policy().allowing_vendor_gemm()) == set()
    softmax = "torch::Tensor f(torch::Tensor x) { return at::softmax(x, 1); }"
    assert RULE in cpp_rules(softmax, Policy().allowing_vendor_gemm())
    assert cpp_rules(softmax, Policy(allow_ops=frozenset({"aten::softmax"}))) == set()
    below = "torch::Tensor f(torch::Tensor a, torch::Tensor b) { return at::cpu::mm(a, b); }"
    assert RULE in cpp_rules(below, Policy().allowing_vendor_gemm())  # beneath the dispatcher, never allowed


def test_docstrings_are_prose_and_static_checks_off_means_off() -> None:
    source = '"""Unlike at::cpu::_softmax, this kernel ... x.sum()."""\n' + HEADER
    source += 'class ModelNew:\n    """Not x.sum()."""\n\n    def forward(self, x):\n        """Nor at::mm."""\n'
    assert check_source(source, Policy(), set()) == []
    cpp = HEADER + "CPP = 'auto y = at::cpu::_softmax(x, 1, false);'\n"  # short strings are read too
    assert {v.rule for v in check_source(cpp, Policy(), set())} == {RULE}
    assert check_source(cpp, Policy(static_checks=False), set()) == []


def test_comments_are_removed_the_way_the_compiler_removes_them() -> None:
    assert "_softmax" not in code_only("// a line comment \\\n at::cpu::_softmax(x);")  # spliced: still comment
    assert "_softmax" in code_only("/* a block */ at::cpu::_softmax(x);")
    assert "_softmax" in code_only('const char* s = "unterminated;\nat::cpu::_softmax(x);')
    assert "#include" not in code_only("#include <torch/extension.h>\nint x;")


def test_every_allow_rule_says_why() -> None:
    rules = policy_rules().cpp_framework
    assert all(rule.why.strip() and (rule.names or rule.patterns) for rule in rules.allow)
    assert rules.methods.why.strip()
    assert RULE in policy_rules().rule_help


# Candidates that are templates, filled in by their tests (tests/candidates/paths/): not Python until then.
_TEMPLATE = re.compile(r"@[A-Z_]+@")


def honest_sources() -> list[Path]:
    """Every C++/CUDA (and other) candidate the project ships: examples, the agents' single-shot examples, and the
    test candidates (those meant to be refused are refused for other rules, never this one)."""
    return sorted([*ROOT.glob("examples/*/solution_*.py"), *ROOT.glob("src/kforge/data/examples/*/*/solution.py"),
                   *[p for p in CANDIDATES.rglob("*.py")
                     if p.name != "below_dispatcher.py" and not _TEMPLATE.search(p.read_text())]])


@pytest.mark.parametrize("path", honest_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_candidate_the_project_has_passes(path: Path) -> None:
    for policy in (Policy(), Policy().allowing_vendor_gemm()):
        assert [v for v in check_source(path.read_text(), policy, set()) if v.rule == RULE] == []


def engine_sources(paths: list[Path]) -> list[tuple[str, bool, str]]:
    """(problem, vendor GEMM allowed, source) for every C++ variant the builtin engine writes for `paths`."""
    from kforge.engine.capture import LoweringError
    from kforge.engine.propose import propose

    found = []
    for path in paths:
        problem = load_problem(path, check_runs=False)
        for vendor in (False, True):
            try:
                variants = propose(problem, "cpp", vendor_gemm=vendor, limit=3).variants
            except LoweringError:
                continue
            found.extend((path.stem, vendor, variant.source) for variant in variants)
    return found


def check_engine(paths: list[Path]) -> None:
    rendered = engine_sources(paths)
    assert rendered
    for name, vendor, source in rendered:
        policy = Policy().allowing_vendor_gemm() if vendor else Policy()
        assert [v for v in check_source(source, policy, set()) if v.rule.startswith("static.cpp")] == [], name


def test_the_engines_cpp_for_the_examples_passes() -> None:
    """The builtin engine's C++ for the bundled examples (rendered, not compiled: a few seconds), the vendor
    variants under the vendor policy. (Over the engine suite and tests/problems/engine, 665 variants, the same
    check takes about 45 s here: run by hand for issue 38, every variant passed.)"""
    check_engine(sorted(ROOT.glob("examples/*/problem.py")))


def test_a_kernel_beneath_the_dispatcher_is_rejected_by_the_harness() -> None:
    """Red team, issue 38: the C++ calls at::cpu::mul and at::cpu::leaky_relu. Through the real evaluation, it is
    rejected before anything is built."""
    verdict = evaluate(PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "below_dispatcher.py",
                       fast_options())
    assert verdict.verdict == Outcome.REJECTED, verdict.reason
    assert verdict.rule == RULE and "at::cpu::leaky_relu" in verdict.reason
    assert verdict.build_s is None
