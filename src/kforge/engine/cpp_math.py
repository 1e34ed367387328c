"""The C++ backend's math helpers (`data/engine/cpp/common.cpp.j2`) built alone: the template without torch's
headers plus one loop per op, compiled by g++ into a plain shared library (about a second) and called through
ctypes. For checking the helpers' accuracy and vectorization (tests/engine/test_cpp_backend.py) and timing
them against <cmath> (benchmarks/cpp_math_bench.py). Our own template code only, never a candidate's.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from kforge.engine import cpp_backend, ir
from kforge.templating import template_environment

# The generated solutions' flags, less OpenMP.
CFLAGS = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-std=c++17"]

Spelling = Callable[[str, list[str]], str]  # (op, operand expressions) -> a C++ expression


def node(op: str) -> ir.Node:
    """A one-op IR node over `x` (or `a`, `b` for a binary op)."""
    return ir.Node("y", op, ("a", "b") if op in ir.BINARY_OPS else ("x",), (1,))


def backend_spelling(op: str, operands: list[str]) -> str:
    """The expression the C++ backend writes for `op` (ops.toml, through cpp_backend)."""
    return cpp_backend.cpp_expression(node(op), operands)


@dataclass(frozen=True)
class MathLibrary:
    library: ctypes.CDLL
    report: str  # GCC's -fopt-info-vec-optimized lines
    loop_lines: dict[str, int]  # op -> the source line of its loop

    def __call__(self, op: str, *args: torch.Tensor) -> torch.Tensor:
        """`op` applied by the library's loop to float32 copies of `args`."""
        args = tuple(a.float().contiguous() for a in args)
        out = torch.empty_like(args[0])
        pointers = [ctypes.c_void_p(t.data_ptr()) for t in (*args, out)]
        getattr(self.library, f"apply_{op}")(*pointers, ctypes.c_long(out.numel()))
        return out

    def vectorized(self, op: str) -> bool:
        """Whether GCC reported the loop of `op` vectorized."""
        line = self.loop_lines[op]
        return re.search(rf"math\.cpp:{line}:\d+: optimized: loop vectorized", self.report) is not None


def math_source(ops: Sequence[str], spelling: Spelling = backend_spelling) -> tuple[str, dict[str, int]]:
    """The helpers and one `apply_<op>` loop per op; with the line of each loop."""
    common = template_environment("kforge", "data/engine/cpp").get_template("common.cpp.j2").render()
    lines = [line for line in common.splitlines() if not re.match(r"#include <(torch|ATen)/", line)]
    loop_lines = {}
    for op in ops:
        operands = ["a[i]", "b[i]"] if op in ir.BINARY_OPS else ["x[i]"]
        params = "".join(f"const float* {name[0]}, " for name in operands)
        lines.append(f'extern "C" void apply_{op}({params}float* y, long n) {{ '
                     f"for (long i = 0; i < n; ++i) y[i] = {spelling(op, operands)}; }}")
        loop_lines[op] = len(lines)
    return "\n".join(lines) + "\n", loop_lines


def build(folder: Path, ops: Sequence[str], target: str = "baseline",
          spelling: Spelling = backend_spelling) -> MathLibrary:
    """Compile the library in `folder` for `target` (`baseline`, or a -march value such as x86-64-v3).
    RuntimeError when there is no g++ or the build fails."""
    compiler = shutil.which("g++")
    if compiler is None:
        raise RuntimeError("needs g++")
    source, loop_lines = math_source(ops, spelling)
    (folder / "math.cpp").write_text(source)
    arch = [] if target == "baseline" else [f"-march={target}"]
    built = subprocess.run([compiler, *CFLAGS, *arch, "-shared", "-fPIC", "-fopt-info-vec-optimized", "-o",
                            str(folder / "math.so"), str(folder / "math.cpp")], capture_output=True, text=True)
    if built.returncode != 0:
        raise RuntimeError(built.stderr[-2000:])
    return MathLibrary(ctypes.CDLL(str(folder / "math.so")), built.stderr, loop_lines)
