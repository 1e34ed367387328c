"""The `kforge` command as a user runs it: a real subprocess, its JSON and its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


# Runs a kforge command in a fresh interpreter and prints its exit status and whether torch was imported.
_WITHOUT_TORCH = ("import json, sys\nfrom kforge.cli import app\ntry:\n    app(sys.argv[1:], prog_name='kforge')\n"
                  "except SystemExit as stop:\n    print(json.dumps([stop.code, 'torch' in sys.modules]))\n")


@pytest.mark.parametrize("command", [
    ["eval", "{missing}/problem.py", str(CANDIDATES / "leaky_scale" / "honest.py")],
    ["eval", str(PROBLEMS / "leaky_scale.py"), "{missing}/solution.py", "--json"],
    ["optimize", "{missing}/problem.py", "--model", "builtin"],
    ["suite", "{missing}", "--out", "{missing}/out"],
], ids=["eval_problem", "eval_solution_json", "optimize", "suite"])
def test_a_missing_file_is_one_line_and_exit_two_before_torch_is_imported(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "not_there_with_a_name_long_enough_to_pass_eighty_columns_in_the_message"
    args = [part.format(missing=missing) for part in command]
    result = subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, *args], capture_output=True, text=True,
                            timeout=120, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    code, imported_torch = json.loads(result.stdout.splitlines()[-1])
    assert code == 2 and not imported_torch
    lines = result.stderr.splitlines()  # piped: whole, not wrapped at 80 columns
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(missing) in lines[0], result.stderr


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
                             str(PROBLEMS / "engine" / "ea_unsupported_sort.py"), "--platform", "cpu",
                             "--db", str(tmp_path / "runs.db"), "--out", str(tmp_path / "best.py")],
                            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert "no model configured: using the builtin engine" in result.stderr
    assert "builtin engine: cannot lower aten.sort; configure a model with --model" in result.stderr
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


def test_a_model_that_stops_answering_loses_nothing_judged(tmp_path) -> None:
    # The builtin engine finds a correct kernel first; then the model's server is unreachable. The kernel is
    # written, the run ends with its reason, and the last line says how to resume.
    db, out = tmp_path / "runs.db", tmp_path / "best.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_"))}
    env.update({"OPENAI_API_KEY": "sk-test-not-real", "KFORGE_RETRIES": "0", "COLUMNS": "200"})
    if "KFORGE_CACHE_DIR" in os.environ:
        env["KFORGE_CACHE_DIR"] = os.environ["KFORGE_CACHE_DIR"]
    result = subprocess.run([sys.executable, "-m", "kforge", "optimize", str(PROBLEMS / "engine" / "channel_gate.py"),
                             "--platform", "cpu", "--model", "openai:gpt-test", "--base-url", "http://127.0.0.1:9/v1",
                             "--db", str(db), "--out", str(out), "--baseline", "eager", "--rep-ms", "50"],
                            capture_output=True, text=True, timeout=900, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.exists() and "class ModelNew" in out.read_text()
    assert "stopped: the model failed" in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(f"resume with: kforge optimize --resume 1 --db {db}")
    said = [line for line in result.stderr.splitlines() if " (generate): correct" in line]
    assert len(said) == 1, result.stderr  # the engine's kernel, said once: the loop starting from it says no more
    listed = kforge("runs", "--db", db)
    assert "finished" in listed.stdout


def test_runs_lists_how_each_ended_filters_by_status_and_rm_removes(tmp_path) -> None:
    from kforge.store import Store

    db = tmp_path / "runs.db"
    with Store(db) as store:
        done = store.create_run(command="optimize", problem_path="/p/gemm.py", platform="cpu", language="cpp",
                                model="builtin")
        attempt = store.record_attempt(done.id, source="kernel", language="cpp", platform="cpu", made_by="builtin")
        store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": 2.0, "speedup_vs_eager": 1.5,
                                             "speedup_vs_compile": 0.8, "platform": "cpu", "language": "cpp",
                                             "reason": "ok"})
        store.finish_run(done.id, "finished", "finished 3 optimization rounds")
        failed = store.create_run(command="optimize", problem_path="/p/scan.py", model="openai:m")
        store.finish_run(failed.id, "failed", "openai:m: server error (HTTP 500)\nmore lines")
    listed = kforge("runs", "--db", db, "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [row["run"] for row in rows] == [2, 1]
    assert rows[1]["best_attempt"] == 1 and rows[1]["runtime_ms"] == 2.0 and rows[1]["speedup_vs_eager"] == 1.5
    assert rows[0]["status"] == "failed" and rows[0]["stop_reason"] == "openai:m: server error (HTTP 500)"
    only_failed = kforge("runs", "--db", db, "--json", "--status", "failed")
    assert [json.loads(line)["run"] for line in only_failed.stdout.splitlines()] == [2]
    assert kforge("runs", "--db", db, "--status", "nonsense").returncode == 2
    table = subprocess.run([sys.executable, "-m", "kforge", "runs", "--db", str(db)], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert "│ failed " in table.stdout and "openai:m:" in table.stdout  # the word, its reason folded below it
    assert all(len(line) <= 80 for line in table.stdout.splitlines())
    assert kforge("rm", "3", "--db", db).returncode == 2  # no such run: nothing removed
    removed = kforge("rm", "2", "--db", db)
    assert removed.returncode == 0 and "removed run 2" in removed.stdout
    assert [json.loads(line)["run"] for line in kforge("runs", "--db", db, "--json").stdout.splitlines()] == [1]


def test_min_speedup_counts_a_slow_best_as_not_successful_yet_writes_it(tmp_path) -> None:
    out = tmp_path / "best.py"
    result = subprocess.run([sys.executable, "-m", "kforge", "optimize", str(PROBLEMS / "engine" / "channel_gate.py"),
                             "--platform", "cpu", "--model", "builtin", "--db", str(tmp_path / "runs.db"), "--out",
                             str(out), "--baseline", "eager", "--rep-ms", "50", "--min-speedup", "1000"],
                            capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 1, result.stderr[-2000:]
    assert "below --min-speedup" in result.stderr and "1000x asked" in result.stderr
    assert out.exists()


def test_commands_that_judge_nothing_never_import_torch(tmp_path) -> None:
    # They answer in well under a second that way (the benchmark of that is `time kforge runs`); here, that torch
    # stays out, which no machine's speed changes.
    for arguments in (["--version"], ["--help"], ["runs", "--db", str(tmp_path / "r.db")],
                      ["rm", "1", "--db", str(tmp_path / "r.db")], ["show", "1", "--db", str(tmp_path / "r.db")]):
        code = (f"import sys\nfrom kforge.cli import app\ntry:\n    app({arguments!r})\nexcept SystemExit:\n    pass\n"
                "print('TORCH' if 'torch' in sys.modules else 'NO TORCH')")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert result.stdout.strip().endswith("NO TORCH"), (arguments, result.stdout[-300:], result.stderr[-300:])


def test_the_cli_default_of_timing_rounds_is_the_harness_default() -> None:
    from kforge.cli import DEFAULT_TIMING_ROUNDS
    from kforge.verify.evaluate import TimingSettings

    assert TimingSettings().rounds == DEFAULT_TIMING_ROUNDS


@pytest.mark.parametrize("command", [
    ["eval", str(PROBLEMS / "leaky_scale.py"), str(CANDIDATES / "leaky_scale" / "honest.py"), "--baseline", "eagr"],
    ["optimize", str(PROBLEMS / "leaky_scale.py"), "--model", "builtin", "--baseline", "eagr"],
    ["suite", str(PROBLEMS / "leaky_scale.py"), "--out", "{tmp}", "--baseline", "eagr"]])
def test_every_command_refuses_an_unknown_baseline_the_same_way(tmp_path: Path, command: list[str]) -> None:
    """eval, optimize and suite build their evaluation options from flags one way (cli._eval_options)."""
    result = kforge(*(part.format(tmp=tmp_path / "out") for part in command))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "error: unknown baseline eagr; choose eager or compile"
