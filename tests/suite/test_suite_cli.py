"""`kforge suite` end to end: real processes, the real harness, the CPU platform. A folder of problems is judged
(or optimized by the builtin engine), each problem gets its row whatever happens to it, a second run redoes
nothing, and a suite killed with SIGKILL loses nothing finished."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CANDIDATES, PROBLEMS

LEAKY = PROBLEMS / "leaky_scale.py"
BROKEN = ("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
          "def get_inputs():\n    raise RuntimeError('no inputs today')\ndef get_init_inputs():\n    return []\n")


def suite(*arguments: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_"))}
    if "KFORGE_CACHE_DIR" in os.environ:
        env["KFORGE_CACHE_DIR"] = os.environ["KFORGE_CACHE_DIR"]
    return subprocess.run([sys.executable, "-m", "kforge", "suite", *arguments], capture_output=True, text=True,
                          timeout=timeout, env=env)


def judged_folder(tmp_path: Path) -> tuple[Path, Path]:
    """Problems: one with an honest solution, one with a rejected one, one that does not load, one without a
    solution."""
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    (problems / "nested").mkdir(parents=True)
    solutions.joinpath("nested").mkdir(parents=True)
    for name in ("honest.py", "nested/rejected.py", "no_solution.py"):
        (problems / name).write_text(LEAKY.read_text())
    (problems / "broken.py").write_text(BROKEN)
    (solutions / "honest.py").write_text((CANDIDATES / "leaky_scale" / "honest.py").read_text())
    (solutions / "nested" / "rejected.py").write_text((CANDIDATES / "leaky_scale" / "read_secrets.py").read_text())
    return problems, solutions


def rows_of(out: Path) -> dict[str, dict[str, object]]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {json.loads(line)["problem"]: json.loads(line) for line in lines}


COMMON = ("--platform", "cpu", "--baseline", "eager", "--rep-ms", "60", "--timeout", "60")


@pytest.mark.slow
def test_a_judged_folder_gives_a_row_per_problem_reports_and_a_second_run_redoes_nothing(tmp_path: Path) -> None:
    problems, solutions = judged_folder(tmp_path)
    out = tmp_path / "out"
    first = suite(str(problems), "--solutions", str(solutions), "--out", str(out), *COMMON)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = rows_of(out)
    assert set(rows) == {"honest.py", "nested/rejected.py", "no_solution.py", "broken.py"}
    assert rows["honest.py"]["status"] == "solved" and rows["honest.py"]["speedup_vs_eager"] is not None
    assert rows["honest.py"]["spread"] is not None and rows["honest.py"]["device"] == "cpu 0"
    assert rows["nested/rejected.py"]["status"] == "unsolved" and rows["nested/rejected.py"]["rule"] == "static.io"
    assert rows["no_solution.py"]["status"] == "error" and "no solution" in str(rows["no_solution.py"]["reason"])
    assert rows["broken.py"]["status"] == "error" and "no inputs today" in str(rows["broken.py"]["reason"])

    summary = json.loads((out / "summary.json").read_text())
    assert (summary["problems"], summary["correct"], summary["errors"]) == (4, 1, 2)
    assert summary["fast_p"]["eager"]["0"] == 0.25
    assert summary["rejections_by_rule"] == {"static.io": 1}
    report = (out / "report.md").read_text()
    assert "| nested/rejected.py | unsolved | rejected |" in report
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 4

    started = time.monotonic()
    again = suite(str(problems), "--solutions", str(solutions), "--out", str(out), *COMMON)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len((out / "results.jsonl").read_text().splitlines()) == 4  # nothing was done twice
    assert time.monotonic() - started < 60  # (no evaluation ran: seconds, not minutes)


@pytest.mark.slow
def test_a_suite_killed_with_sigkill_keeps_finished_problems_and_continues(tmp_path: Path) -> None:
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    problems.mkdir()
    solutions.mkdir()
    for index in range(3):
        (problems / f"p{index}.py").write_text(LEAKY.read_text())
        (solutions / f"p{index}.py").write_text((CANDIDATES / "leaky_scale" / "honest.py").read_text())
    out = tmp_path / "out"
    command = [sys.executable, "-m", "kforge", "suite", str(problems), "--solutions", str(solutions), "--out",
               str(out), *COMMON]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    kept = rows_of(out)
    assert len(kept) >= 1 and all(row["status"] == "solved" for row in kept.values())
    time.sleep(1)
    leftovers = subprocess.run(["pgrep", "-f", f"kforge.suite.task .*{tmp_path.name}"], capture_output=True)
    assert leftovers.stdout == b"", "a task outlived its suite"

    resumed = suite(str(problems), "--solutions", str(solutions), "--out", str(out), *COMMON)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    lines = [json.loads(line)["problem"] for line in results.read_text().splitlines() if line.endswith("}")]
    assert sorted(set(lines)) == ["p0.py", "p1.py", "p2.py"]
    for name in kept:
        assert lines.count(name) == 1, f"{name} was finished before the kill and done again"


@pytest.mark.slow
def test_the_builtin_engine_optimizes_every_problem_of_a_folder(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    (problems / "channel_gate.py").write_text((PROBLEMS / "engine" / "channel_gate.py").read_text())
    (problems / "sort.py").write_text((PROBLEMS / "engine" / "ea_unsupported_sort.py").read_text())
    out = tmp_path / "out"
    result = suite(str(problems), "--model", "builtin", "--out", str(out), "--db", str(tmp_path / "runs.db"),
                   *COMMON)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = rows_of(out)
    assert rows["channel_gate.py"]["status"] == "solved" and rows["channel_gate.py"]["run_id"] is not None
    assert int(rows["channel_gate.py"]["attempts"]) >= 1  # type: ignore[call-overload]
    assert rows["channel_gate.py"]["speedup_vs_eager"] is not None  # from the end-of-run confirmation
    assert rows["sort.py"]["status"] == "unsolved" and "cannot lower" in str(rows["sort.py"]["reason"])


RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a throwaway cluster on loopback


@pytest.fixture
def ray_cluster(tmp_path: Path) -> Iterator[str]:
    """A local Ray cluster with two logical GPUs (no real one is needed to place work on them)."""
    pytest.importorskip("ray", reason="the Ray path needs pip install 'kforge[ray]'")
    port = _free_port()
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": os.pathsep.join(sys.path)}
    scratch = tempfile.mkdtemp(prefix="kray", dir="/tmp")  # Ray's socket paths must stay under 108 bytes
    started = subprocess.run(["ray", "start", "--head", f"--port={port}", "--num-gpus=2", "--num-cpus=2",
                              "--include-dashboard=false", f"--temp-dir={scratch}"],
                             capture_output=True, text=True, timeout=180, env=env)
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=120, env=env)
        shutil.rmtree(scratch, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_on_ray_work_lands_on_distinct_gpus_a_killed_actor_is_retried_and_rows_match(tmp_path: Path,
                                                                                      ray_cluster: str) -> None:
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    problems.mkdir()
    solutions.mkdir()
    for index in range(4):
        (problems / f"p{index}.py").write_text(LEAKY.read_text())
        (solutions / f"p{index}.py").write_text((CANDIDATES / "leaky_scale" / "honest.py").read_text())
    out = tmp_path / "ray_out"
    command = [sys.executable, "-m", "kforge", "suite", str(problems), "--solutions", str(solutions), "--out",
               str(out), "--ray", ray_cluster, "--platform", "auto", "--baseline", "eager", "--rep-ms", "60"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **RAY_ENV})
    killed = _kill_one_busy_actor(process, deadline=time.monotonic() + 300)
    _, stderr = process.communicate(timeout=900)
    assert process.returncode == 0, stderr[-3000:]
    rows = rows_of(out)
    assert sorted(rows) == ["p0.py", "p1.py", "p2.py", "p3.py"]
    assert all(row["status"] == "solved" for row in rows.values())
    devices = {str(row["device"]).split(" on ")[0] for row in rows.values()}
    assert devices == {"gpu 0", "gpu 1"}, devices
    assert killed and any(row["tries"] == 2 for row in rows.values()), "the killed actor's problem was not retried"

    local = tmp_path / "local_out"
    result = suite(str(problems), "--solutions", str(solutions), "--out", str(local), *COMMON)
    assert result.returncode == 0, result.stderr[-3000:]
    same = ("status", "verdict", "rule", "attempts")
    assert {n: [r[k] for k in same] for n, r in rows_of(local).items()} == {n: [r[k] for k in same]
                                                                            for n, r in rows.items()}


def _kill_one_busy_actor(suite_process: subprocess.Popen[str], deadline: float) -> bool:
    """SIGKILL one Ray actor while a task of its runs; whether one was found before the suite ended."""
    while time.monotonic() < deadline and suite_process.poll() is None:
        tasks = subprocess.run(["pgrep", "-f", "kforge.suite.task"], capture_output=True, text=True).stdout.split()
        for task in tasks:
            parent = Path(f"/proc/{task}/stat").read_text().rsplit(")", 1)[1].split()[1] if \
                Path(f"/proc/{task}/stat").exists() else ""
            title = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace") if parent and \
                Path(f"/proc/{parent}/cmdline").exists() else ""
            if "_TaskActor" in title:
                os.kill(int(parent), signal.SIGKILL)
                return True
        time.sleep(0.3)
    return False
