"""`kforge optimize` on a GPU with a scripted model: the KForge loop end to end, targeting CUDA C++.

    python benchmarks/gpu_optimize_e2e.py [--out DIR]

Starts a scripted OpenAI-compatible server on 127.0.0.1 (the test suite's), whose replies are: a CUDA
candidate that builds but ignores the learned scale (wrong), a correct one that launches its kernel ten
times (slow), the analyst's recommendation, and the single-launch kernel (fast). Runs the real command
against tests/problems/gpu_leaky_scale.py and prints the run's table. Asserts nothing; prints what happened.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm.llm_servers import ScriptedServer, openai_completion, openai_stream  # noqa: E402

HONEST = (ROOT / "tests" / "candidates" / "gpu_leaky_scale" / "cuda_honest.py").read_text()
FORWARD = "        return ext.leaky_scale(x, self.scale)\n"


def variant(forward: str) -> str:
    assert FORWARD in HONEST, "cuda_honest.py changed shape; update this script"
    return "```python\n" + HONEST.replace(FORWARD, forward) + "```"


REPLIES = [
    variant("        return ext.leaky_scale(x, torch.ones_like(self.scale))\n"),
    variant("        for _ in range(10):\n            out = ext.leaky_scale(x, self.scale)\n        return out\n"),
    "Recommendation: launch the kernel once per forward instead of ten times.\n"
    "Reason: ten identical kernels account for all of the time.",
    "```python\n" + HONEST + "```",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or tempfile.mkdtemp()))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "gpu_optimize.db"
    env = {**os.environ, "OPENAI_API_KEY": "sk-scripted", "COLUMNS": "160"}
    with ScriptedServer() as server:
        # Generation replies stream (the loop asks for a stream to show progress); the analyst's does not.
        server.push(*(openai_completion(reply) if reply.startswith("Recommendation") else openai_stream([reply])
                      for reply in REPLIES))
        command = [sys.executable, "-m", "kforge", "optimize", str(ROOT / "tests/problems/gpu_leaky_scale.py"),
                   "--platform", "cuda", "--language", "cuda", "--model", "openai:scripted", "--base-url",
                   f"{server.url}/v1", "--db", str(db), "--out", str(args.out / "best_cuda.py"), "--rounds", "1",
                   "--attempts", "3", "--baseline", "eager", "--rep-ms", "300", "--timeout", "60"]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=540)
        print(result.stdout)
        print(result.stderr[-4000:])
        print(f"exit status {result.returncode}; the server answered {len(server.received)} requests")


if __name__ == "__main__":
    main()
