"""`kforge optimize --pipeline staged` on a GPU with a scripted model: the staged pipeline on a Triton kernel.

    python benchmarks/gpu_staged_e2e.py [--out DIR]

Starts a scripted OpenAI-compatible server on 127.0.0.1 (the test suite's) and runs the real command on
tests/problems/gpu_leaky_scale.py with --platform cuda --language triton. The starting kernel (--kernel) is
tests/candidates/gpu_leaky_scale/triton_rows.py made to launch its kernel eight times per forward. The model's
script:

  1. analysis: a fusion issue (eight launches) and an autotuning issue (fixed tile sizes);
  2. planner: autotuning first (the hard dependency puts fusion first);
  3. fusion, try 1: one launch but num_warps=3 -> rejected by the knowledge base, never run;
  4. fusion, try 2: one launch, num_warps=4 -> expected to be accepted (about 8x less time);
  5. a fresh analysis of the accepted kernel: the autotuning issue again (re-plan);
  6. autotuning, try 1: forgets the leaky slope -> a mismatch against the PyTorch reference;
  7. autotuning, try 2: @triton.autotune over three tile configurations -> kept only if faster beyond noise.

Prints the run's attempts table, its trial tree (kforge show) and the exit status. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm.llm_servers import ScriptedServer, openai_completion  # noqa: E402

ROWS = (ROOT / "tests" / "candidates" / "gpu_leaky_scale" / "triton_rows.py").read_text()
LAUNCH = ("        _leaky_scale_tile[grid](x, self.scale, out, rows, cols, BLOCK_R=block_r, BLOCK_C=block_c, "
          "num_warps=4)\n")
AUTOTUNE = '''@triton.autotune(
    configs=[triton.Config({"BLOCK_R": 4, "BLOCK_C": 512}, num_warps=4),
             triton.Config({"BLOCK_R": 8, "BLOCK_C": 512}, num_warps=8),
             triton.Config({"BLOCK_R": 2, "BLOCK_C": 1024}, num_warps=4)],
    key=["rows", "cols"],
)
@triton.jit
'''
TUNED_LAUNCH = '''        def grid(meta):
            return (triton.cdiv(rows, meta["BLOCK_R"]), triton.cdiv(cols, meta["BLOCK_C"]))

        _leaky_scale_tile[grid](x, self.scale, out, rows, cols)
'''


def launches(count: int, warps: int = 4) -> str:
    assert LAUNCH in ROWS, "triton_rows.py changed shape; update this script"
    launch = LAUNCH.replace("num_warps=4", f"num_warps={warps}")
    if count > 1:
        launch = f"        for _ in range({count}):\n    " + launch
    return ROWS.replace(LAUNCH, launch)


def autotuned(slope: str = "0.1") -> str:
    source = ROWS.replace("@triton.jit\n", AUTOTUNE).replace(LAUNCH, TUNED_LAUNCH)
    source = source.replace("        block_r, block_c = 4, 512\n        grid = (triton.cdiv(rows, block_r), "
                            "triton.cdiv(cols, block_c))\n", "")
    return source.replace("0.1 * y", f"{slope} * y")


def fenced(source: str) -> str:
    return "```python\n" + source + "```\n"


def issues(*pairs: tuple[str, str]) -> str:
    return json.dumps({"issues": [{"stage": s, "issue": i, "evidence": "the profile"} for s, i in pairs]})


REPLIES = [
    issues(("fusion", "the forward launches the same kernel eight times; launch it once"),
           ("autotuning", "BLOCK_R and BLOCK_C are fixed at 4 x 512")),
    json.dumps({"order": ["autotuning", "fusion"], "reason": "scripted"}),
    fenced(launches(1, warps=3)),
    fenced(launches(1)),
    issues(("autotuning", "BLOCK_R and BLOCK_C are fixed at 4 x 512")),
    fenced(autotuned(slope="1.0")),
    fenced(autotuned()),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or tempfile.mkdtemp()))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "gpu_staged.db"
    start = Path(tempfile.mkdtemp()) / "triton_eight_launches.py"
    start.write_text(launches(8))
    env = {**os.environ, "OPENAI_API_KEY": "sk-scripted", "COLUMNS": "160"}
    with ScriptedServer() as server:
        server.push(*(openai_completion(reply) for reply in REPLIES))
        command = [sys.executable, "-m", "kforge", "optimize", str(ROOT / "tests/problems/gpu_leaky_scale.py"),
                   "--platform", "cuda", "--language", "triton", "--pipeline", "staged", "--kernel", str(start),
                   "--stages", "fusion,autotuning", "--retries", "1", "--model", "openai:scripted", "--base-url",
                   f"{server.url}/v1", "--db", str(db), "--out", str(args.out / "best_staged.py"), "--baseline",
                   "eager", "--rep-ms", "300", "--timeout", "120"]
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=540)
        print(result.stdout)
        print(result.stderr[-4000:])
        print(f"exit status {result.returncode}; the server answered {len(server.received)} of {len(REPLIES)} "
              f"scripted requests")
    shown = subprocess.run([sys.executable, "-m", "kforge", "show", "1", "--db", str(db)], env=env,
                           capture_output=True, text=True, timeout=120)
    print(shown.stdout[-6000:] or shown.stderr[-2000:])


if __name__ == "__main__":
    main()
