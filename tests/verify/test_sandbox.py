"""The worker's environment and limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.verify.evaluate import evaluate
from kforge.verify.sandbox import ALLOCATOR_TUNABLES, scrubbed_environment
from kforge.verify.verdict import Outcome
from tests.conftest import CANDIDATES, POLICY_OFF, PROBLEMS, fast_options


def test_secrets_are_scrubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_PASSWORD",
                 "KFORGE_DB", "HF_TOKEN"):
        monkeypatch.setenv(name, "secret-value")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    env = scrubbed_environment({}, tmp_path)
    assert "secret-value" not in env.values()
    assert env["OMP_NUM_THREADS"] == "2"
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path)
    # The allocator keeps freed memory in every worker (see ALLOCATOR_TUNABLES; its effect is measured by
    # benchmarks/harness_overhead.py, docs/harness.md: page faults are too noisy for a test to count).
    assert env["GLIBC_TUNABLES"] == ALLOCATOR_TUNABLES


def test_input_variants_are_all_checked() -> None:
    problem = PROBLEMS / "variants_sum_rows.py"
    options = fast_options(policy=POLICY_OFF, measure=False)
    assert evaluate(problem, CANDIDATES / "variants_sum_rows_torch.py", options).verdict == Outcome.CORRECT
    fixed = evaluate(problem, CANDIDATES / "variants_sum_rows_fixed_shape.py", options)
    assert fixed.verdict == Outcome.RUNTIME_ERROR
    assert "shape '[32, 64]' is invalid" in fixed.reason


_PINNED_HARNESS = """
import json, os, sys, tempfile
from pathlib import Path
import kforge
import torch  # with OMP_PROC_BIND set, OpenMP pins this thread to one CPU as torch loads
from kforge.verify.sandbox import Limits, Worker

pinned = sorted(os.sched_getaffinity(0))
with Worker(Path(tempfile.mkdtemp()), Limits()) as worker:
    worker_cpus = sorted(os.sched_getaffinity(worker.process.pid))
print(json.dumps({"start": sorted(kforge.CPUS_AT_START), "pinned": pinned, "worker": worker_cpus}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two CPUs")
def test_workers_get_every_cpu_back_when_the_harness_was_pinned(tmp_path: Path) -> None:
    # Before: OMP_PROC_BIND made every worker inherit the harness's one CPU, and C++ kernels ran on one core.
    env = {**os.environ, "OMP_PROC_BIND": "close", "OMP_PLACES": "cores"}
    done = subprocess.run([sys.executable, "-c", _PINNED_HARNESS], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    cpus = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(cpus["pinned"]) == 1, f"torch's OpenMP did not pin the harness, so nothing is tested: {cpus}"
    assert cpus["worker"] == cpus["start"] and len(cpus["worker"]) >= 2

