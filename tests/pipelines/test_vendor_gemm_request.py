"""`kforge optimize --allow-vendor-gemm` as the library sees it: the request keeps it across a resume, the
builtin engine offers vendor variants only with it, and the LLM loop's evaluations use its policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.engine.capture import LoweringError
from kforge.llm.budget import Budget
from kforge.llm.factory import make_chat_model
from kforge.pipelines.loop import LoopSettings
from kforge.pipelines.optimize import (
    OptimizeRequest,
    check_builtin,
    resume_request,
    run_builtin,
    run_optimize,
    start_run,
)
from kforge.store import Store
from kforge.verify.evaluate import EvalOptions
from tests.conftest import CANDIDATES, FAST_TIMING, PROBLEMS
from tests.llm.llm_servers import ScriptedServer, openai_stream

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

LINEAR_GELU = PROBLEMS / "engine" / "linear_gelu.py"
CONV = PROBLEMS / "engine" / "conv2d_input_weight.py"  # a weight that is no parameter: not generated in Triton
FAST = EvalOptions(trials=1, baselines=(), timing=FAST_TIMING, timeout_s=60.0)


def request(problem: Path, vendor: bool, model: str = "builtin", language: str = "triton") -> OptimizeRequest:
    return OptimizeRequest(problem=problem, platform="cpu", language=language, model=model, eval_options=FAST,
                           allow_vendor_gemm=vendor, builtin_start=False,
                           loop=LoopSettings(attempts=1, rounds=0))


def test_the_run_record_keeps_the_vendor_policy_for_a_resume(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        for vendor in (True, False):
            run_id = start_run(store, request(LINEAR_GELU, vendor))
            resumed = resume_request(store, run_id, FAST)
            assert resumed.allow_vendor_gemm is vendor
            assert resumed.evaluation_options().policy.vendor_gemm is vendor


def test_a_full_convolution_in_triton_needs_the_vendor_policy() -> None:
    with pytest.raises(LoweringError, match="vendor"):
        check_builtin(request(CONV, vendor=False))
    check_builtin(request(CONV, vendor=True))


def test_the_builtin_engine_judges_vendor_variants_correct_only_when_allowed(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as store:
        run_id = start_run(store, request(LINEAR_GELU, vendor=True))
        result = run_builtin(store, run_id, request(LINEAR_GELU, vendor=True)).result
    vendor = [record for record in result.attempts if "F.linear(" in record.source]
    assert vendor and all(record.verdict is not None and record.verdict.correct for record in vendor)
    assert result.best is not None


@pytest.mark.slow  # one C++ build (the LLM loop has no single-shot example for Triton on the cpu platform)
def test_the_llm_loop_evaluates_under_the_vendor_policy(tmp_path: Path) -> None:
    reply = "```python\n" + (CANDIDATES / "linear_gelu" / "cpp_vendor_linear.py").read_text() + "```"
    outcomes = {}
    with ScriptedServer() as server, Store(tmp_path / "runs.db") as store:
        for vendor in (False, True):
            server.push(openai_stream([reply[i:i + 300] for i in range(0, len(reply), 300)]))
            chat = make_chat_model("openai:test-model", base_url=f"{server.url}/v1", api_key="sk-test-not-real")
            wanted = request(LINEAR_GELU, vendor, model="openai:test-model", language="cpp")
            run_id = start_run(store, wanted)
            result = run_optimize(store, run_id, wanted, chat, Budget(max_calls=2), use_cache=False).result
            [attempt] = result.attempts
            assert attempt.verdict is not None
            outcomes[vendor] = (attempt.verdict.verdict, attempt.verdict.rule)
    assert outcomes == {False: ("rejected", "static.framework-compute"), True: ("correct", None)}
