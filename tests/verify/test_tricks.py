"""Every known way a kernel can fake a win, each as a candidate the harness must reject or see through.

Where a trick is stopped by the static policy, it is run a second time with static checks off, to show
that the next line of defence (dynamic policy, isolation, or the measurement itself) holds as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.policy import Policy
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, PROBLEMS, STATIC_OFF, fast_options

LEAKY = PROBLEMS / "leaky_scale.py"
TRICKS = CANDIDATES / "leaky_scale"


def judge(candidate: str, policy: Policy | None = None, **changes: object):
    options = fast_options(**({"policy": policy} if policy else {}), **changes)
    return evaluate(LEAKY, TRICKS / f"{candidate}.py", options)


# candidate, expected outcome, expected rule (None: no rule), with the default (strict) policy
STATIC_CATCHES = [
    ("dynamic_name_delegation", Outcome.REJECTED, "static.dynamic-name"),
    ("layer_delegation", Outcome.REJECTED, "static.framework-compute"),
    ("patched_clock", Outcome.REJECTED, "static.import"),
    ("patched_timer_module", Outcome.REJECTED, "static.introspection"),
    ("process_search", Outcome.REJECTED, "static.introspection"),
    ("thread_after_return", Outcome.REJECTED, "static.concurrency"),
    ("native_thread_after_warmup", Outcome.REJECTED, "static.cpp-concurrency"),
    ("raised_priority", Outcome.REJECTED, "static.cpp-process"),
    ("patched_comparison", Outcome.REJECTED, "static.monkeypatch"),
    ("read_secrets", Outcome.REJECTED, "static.io"),
    ("exit_process", Outcome.REJECTED, "static.process"),
    ("segfault", Outcome.REJECTED, "static.introspection"),
    ("try_fallback", Outcome.REJECTED, "static.try-except"),
    ("compiled", Outcome.REJECTED, "static.compiler"),
]


@pytest.mark.parametrize(("candidate", "outcome", "rule"), STATIC_CATCHES)
def test_static_policy_rejects_before_running(candidate: str, outcome: Outcome, rule: str) -> None:
    verdict = judge(candidate)
    assert verdict.verdict == outcome, verdict.reason
    assert verdict.rule == rule, verdict.reason
    assert verdict.build_s is None, "a statically rejected candidate must never reach the worker"


# The same tricks with the static policy off: the dynamic defences must hold on their own.
DYNAMIC_CATCHES = [
    ("dynamic_name_delegation", {Outcome.REJECTED}, "dynamic.framework-op"),
    ("layer_delegation", {Outcome.REJECTED}, "dynamic.framework-op"),
    ("patched_clock", {Outcome.REJECTED}, "dynamic.tamper"),
    ("patched_timer_module", {Outcome.REJECTED}, "dynamic.tamper"),
    ("patched_comparison", {Outcome.REJECTED}, "dynamic.tamper"),
    ("process_search", {Outcome.INCORRECT}, None),
    ("thread_after_return", {Outcome.REJECTED, Outcome.INCORRECT}, None),
    ("native_thread_after_warmup", {Outcome.INCORRECT}, None),  # the outputs kept while timing are unfinished
    ("tensor_subclass", {Outcome.REJECTED}, "dynamic.output-type"),
    ("compiled", {Outcome.REJECTED}, "dynamic.framework-op"),
]


@pytest.mark.parametrize(("candidate", "outcomes", "rule"), DYNAMIC_CATCHES)
def test_dynamic_defences_hold_without_static_checks(candidate: str, outcomes: set[Outcome],
                                                     rule: str | None) -> None:
    verdict = judge(candidate, STATIC_OFF)
    assert verdict.verdict in {o.value for o in outcomes}, verdict.reason
    if rule:
        assert verdict.rule == rule, verdict.reason


def test_loosened_numerics_settings_are_rejected() -> None:
    # No static rule sees a setter call or an alias; the worker compares torch's settings with its snapshot.
    verdict = judge("loosened_precision")
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.settings", verdict.reason
    assert "float32 matmul precision (highest -> " in verdict.reason
    assert "cuBLAS TF32 (False -> True)" in verdict.reason


def test_a_raised_priority_is_refused_without_static_checks() -> None:
    # The worker holds no capability (the sandbox drops them all, root's too), so the kernel refuses the raise
    # and the kernel runs at the worker's priority: judged as the honest kernel it otherwise is.
    verdict = judge("raised_priority", STATIC_OFF)
    assert verdict.verdict == Outcome.CORRECT, verdict.reason


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="raising a priority needs root")
def test_the_scheduling_watch_sees_a_raised_priority() -> None:
    # The watch behind dynamic.scheduling, for a process that could raise its priority (an RLIMIT_NICE that
    # allows it, or a capability): run unconfined, as root, in a process of its own.
    code = ("import os\nos.nice(5)\nfrom kforge.verify.tamper import CandidateWatch\nwatch = CandidateWatch()\n"
            "os.setpriority(os.PRIO_PROCESS, 0, 0)\nprint(watch.finding(candidate_loaded=True))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "dynamic.scheduling" in found and "nice 5 -> 0" in found


def test_a_forged_reply_on_the_workers_channel_is_rejected() -> None:
    verdict = judge("forged_reply", STATIC_OFF)
    assert verdict.verdict == Outcome.REJECTED and verdict.rule == "dynamic.protocol", verdict.reason
    assert "did not fit the protocol (ops: Input should be a valid list)" in verdict.reason


def test_answer_written_over_input_fails() -> None:
    verdict = judge("answer_over_input")
    assert verdict.verdict == Outcome.INCORRECT
    assert "modified input 0" in verdict.reason


def test_cache_by_address_fails() -> None:
    verdict = judge("cache_by_address")
    assert verdict.verdict == Outcome.INCORRECT, verdict.reason


def test_answers_precomputed_for_predictable_inputs_gain_nothing() -> None:
    # The trick draws, while it is built, the inputs a fixed rule of seeds would give the timed calls, and
    # answers from that table. With the input seeds known (given, as for a reproduction) every timed call hits,
    # but the batches the harness times on its own clock draw inputs the table lacks, and each of their calls
    # pays for the misses: the worker's figure contradicts the harness's clock.
    cheat = judge("precomputed_answers", input_seed=0)
    assert cheat.verdict == Outcome.REJECTED and cheat.rule == "dynamic.clock", cheat.reason
    assert cheat.input_seed == 0 and "on the harness's own clock" in cheat.reason
    honest = judge("honest")
    assert honest.verdict == Outcome.CORRECT and honest.runtime_ms is not None, honest.reason
    # Drawn secretly for each evaluation (the default), every call misses and pays 30 kernel runs.
    verdict = judge("precomputed_answers")
    assert verdict.verdict == Outcome.CORRECT and verdict.input_seed is not None, verdict.reason
    # Quickest calls compared: a machine busy with other work moves medians far more (CI's twice-loaded cores once
    # took an honest median to 6.8 ms, its quickest call staying at 0.42 ms).
    assert verdict.timing is not None and honest.timing is not None
    assert verdict.timing.min_ms > 0.9 * honest.timing.min_ms, (verdict.timing, honest.timing)  # gains nothing


def test_replay_after_warmup_is_caught_by_spot_checks() -> None:
    verdict = judge("replay_after_warmup")
    assert verdict.verdict == Outcome.INCORRECT, verdict.reason
    assert "while timing" in verdict.reason


def test_cache_by_sampled_elements_gains_nothing() -> None:
    # A miss costs 30 kernel runs; a hit costs nothing. Fresh inputs on every timed call mean every call
    # misses, so the median is the slow path's time, above a single kernel run's. (Not "30 times above":
    # with the suite running on both cores, the honest kernel's OpenMP threads lose whole time slices, and
    # one run measured 8 ms against 39 ms.)
    verdict = judge("cache_by_samples")
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
    honest = judge("honest")
    assert verdict.runtime_ms is not None and honest.runtime_ms is not None
    assert verdict.runtime_ms > 2 * honest.runtime_ms, (verdict.timing, honest.timing)


def test_zeros_cannot_pass_a_problem_with_tiny_outputs() -> None:
    options = fast_options()
    verdict = evaluate(PROBLEMS / "tiny_outputs.py", CANDIDATES / "tiny_outputs" / "zeros.py", options)
    assert verdict.verdict == Outcome.INCORRECT
    assert "relative error norm" in verdict.reason
    assert any("below atol" in warning for warning in verdict.warnings)


def test_secrets_never_reach_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-kforge-test-secret-4242"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    verdict = judge("read_secrets", STATIC_OFF)
    assert verdict.verdict == Outcome.RUNTIME_ERROR
    assert "OPENAI_API_KEY" in verdict.reason  # the KeyError names the variable, never its value
    assert secret not in verdict.model_dump_json()
    assert os.environ["OPENAI_API_KEY"] == secret


def test_os_exit_is_contained() -> None:
    verdict = judge("exit_process", STATIC_OFF)
    assert verdict.verdict == Outcome.CRASHED
    assert "exited with status 3" in verdict.reason


def test_segfault_is_contained() -> None:
    verdict = judge("segfault", STATIC_OFF)
    assert verdict.verdict == Outcome.CRASHED
    assert "SIGSEGV" in verdict.reason


def test_infinite_loop_times_out() -> None:
    verdict = judge("infinite_loop", timeout_s=5.0)
    assert verdict.verdict == Outcome.TIMEOUT
    assert "5 s" in verdict.reason


def test_memory_hog_is_stopped() -> None:
    verdict = judge("memory_hog", memory_mb=1536)
    assert verdict.verdict in {Outcome.CRASHED, Outcome.RUNTIME_ERROR}, verdict.reason
    assert "memory" in verdict.reason.lower()


def test_exception_in_forward_is_a_runtime_error() -> None:
    verdict = judge("raises")
    assert verdict.verdict == Outcome.RUNTIME_ERROR
    assert "kernel launch configuration is invalid" in verdict.reason


def test_a_runtime_error_cites_the_candidates_own_file_name(tmp_path: Path) -> None:
    path = tmp_path / "my_kernel.py"
    path.write_text((TRICKS / "raises.py").read_text())
    verdict = evaluate(LEAKY, path, fast_options())
    assert verdict.verdict == Outcome.RUNTIME_ERROR
    assert "at my_kernel.py:13 in forward" in verdict.reason and "solution.py" not in verdict.reason, verdict.reason


def test_wrong_constant_is_incorrect() -> None:
    verdict = judge("wrong_slope", STATIC_OFF.model_copy(update={"dynamic_checks": False}))
    assert verdict.verdict == Outcome.INCORRECT
    assert "out of tolerance" in verdict.reason


def test_compile_error_reports_the_compiler_line() -> None:
    verdict = judge("compile_error")
    assert verdict.verdict == Outcome.COMPILE_ERROR
    assert "error" in verdict.reason and "main.cpp" in verdict.reason


def test_honest_candidate_passes_and_is_cached_on_the_second_evaluation() -> None:
    first = judge("honest")
    assert first.verdict == Outcome.CORRECT, first.reason
    assert first.trials == 2 and first.runtime_ms is not None and first.runtime_ms > 0
    assert first.max_abs_error is not None and first.max_abs_error < 1e-5
    second = judge("honest")
    assert second.verdict == Outcome.CORRECT
    assert second.build_s is not None and second.build_s < 5.0, "the second build must come from the cache"
