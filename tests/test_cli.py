"""The `kforge` command as a user runs it: a real subprocess, its JSON and its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import CANDIDATES, PROBLEMS

FAST = ["--platform", "cpu", "--trials", "2", "--rep-ms", "50", "--no-baselines"]


def kforge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kforge", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def test_json_for_a_correct_candidate_exits_zero() -> None:
    result = kforge("eval", PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py", *FAST, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["verdict"] == "correct" and record["correct"] is True
    for key in ("reason", "runtime_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile",
                "max_abs_error"):
        assert key in record
    assert record["runtime_ms"] > 0 and record["eager_ms"] is None


def test_rejected_candidate_exits_one_with_the_rule() -> None:
    result = kforge("eval", PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "layer_delegation.py",
                    *FAST, "--json")
    assert result.returncode == 1
    record = json.loads(result.stdout)
    assert record["verdict"] == "rejected" and record["rule"] == "static.framework-compute"


def test_bad_problem_exits_two_with_one_line() -> None:
    result = kforge("eval", PROBLEMS / "bad" / "missing_names.py", CANDIDATES / "leaky_scale" / "honest.py", *FAST)
    assert result.returncode == 2
    assert "lacks get_inputs" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_platform_is_bad_input() -> None:
    result = kforge("eval", PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py",
                    "--platform", "tpu", "--json")
    assert result.returncode == 2
    assert "unknown platform" in json.loads(result.stdout)["error"]


def test_human_output_is_a_table() -> None:
    result = kforge("eval", PROBLEMS / "leaky_scale.py", CANDIDATES / "leaky_scale" / "honest.py", *FAST)
    assert result.returncode == 0, result.stderr
    assert "verdict" in result.stdout and "correct" in result.stdout and "candidate" in result.stdout


def test_help_explains_the_command() -> None:
    result = kforge("eval", "--help")
    assert result.returncode == 0
    assert "Exit status" in result.stdout and "--timeout" in result.stdout


def test_optimize_without_a_model_uses_the_builtin_engine_and_says_so(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFORGE_", "OPENAI_", "ANTHROPIC_"))}
    # A problem the engine cannot lower: the run ends at once, with one line naming the operation.
    result = subprocess.run([sys.executable, "-m", "kforge", "optimize",
                             str(PROBLEMS / "engine" / "ea_unsupported_cumsum.py"), "--platform", "cpu",
                             "--db", str(tmp_path / "runs.db"), "--out", str(tmp_path / "best.py")],
                            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert "no model configured: using the builtin engine" in result.stderr
    assert "builtin engine: cannot lower aten.cumsum; configure a model with --model" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "best.py").exists()


def test_show_of_an_unknown_run_is_bad_input(tmp_path) -> None:
    result = kforge("show", "42", "--db", tmp_path / "runs.db")
    assert result.returncode == 2 and "no run 42" in result.stderr


def test_optimize_with_an_untimed_best_says_so(tmp_path) -> None:
    # Triton on the cpu platform runs in the interpreter: correctness only, so the best has no runtime.
    out = tmp_path / "best.py"
    result = kforge("optimize", PROBLEMS / "engine" / "channel_gate.py", "--platform", "cpu", "--language", "triton",
                    "--model", "builtin", "--db", tmp_path / "runs.db", "--out", out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "correct (not timed on this platform)" in result.stdout and f"wrote {out}" in result.stdout
    assert "Traceback" not in result.stderr and "@triton.jit" in out.read_text()


def test_rounds_are_an_option_and_must_be_at_least_one() -> None:
    honest = CANDIDATES / "leaky_scale" / "honest.py"
    fast_with_eager = [*FAST[:-1], "--baseline", "eager"]
    result = kforge("eval", PROBLEMS / "leaky_scale.py", honest, *fast_with_eager, "--rounds", "2", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["correct"] is True and record["eager_ms"] > 0 and record["speedup_vs_eager"] > 0
    refused = kforge("eval", PROBLEMS / "leaky_scale.py", honest, *FAST, "--rounds", "0")
    assert refused.returncode == 2 and "rounds" in refused.stderr.lower()


def test_a_model_that_cannot_work_is_bad_input_and_records_no_run(tmp_path) -> None:
    db = tmp_path / "runs.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_"))}
    for model, said in (("nonsense", "expected PROVIDER:MODEL"), ("openai:gpt-4o", "no API key; set OPENAI_API_KEY")):
        result = subprocess.run([sys.executable, "-m", "kforge", "optimize", str(PROBLEMS / "leaky_scale.py"),
                                 "--platform", "cpu", "--model", model, "--db", str(db)], capture_output=True,
                                text=True, timeout=300, env={**env, "COLUMNS": "200"})
        assert result.returncode == 2, result.stderr
        assert said in result.stderr and "Traceback" not in result.stderr
    listed = kforge("runs", "--db", db)
    assert listed.returncode == 0 and "optimize" not in listed.stdout  # no run left 'running' forever
