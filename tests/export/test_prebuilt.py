"""An exported C++ solution loads the library built for this machine instead of compiling, and compiles
wherever the build does not match."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.export.bundle import export_solution
from kforge.export.prebuilt import LOADER_NAME, with_prebuilt_loader
from kforge.pyparse import parse

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "leaky_scale.py"
HONEST = ROOT / "candidates" / "leaky_scale" / "honest.py"

# Imports an exported solution in a fresh interpreter, with torch's own extension folder empty (so a compile
# would show there), and reports where each extension came from and whether ModelNew matches Model.
_IMPORT_AND_CHECK = r"""
import importlib.util, json, sys, types
from pathlib import Path
import torch
from torch.utils import cpp_extension

compiled = []
if sys.argv[3] == "stub-compiler":
    cpp_extension.load_inline = lambda name, *a, **k: compiled.append(name) or types.SimpleNamespace()

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

solution = load(sys.argv[1], "exported_solution")
problem = load(sys.argv[2], "the_problem")
files = sorted(getattr(v, "__file__", "") for v in vars(solution).values() if isinstance(v, types.ModuleType)
               and str(getattr(v, "__file__", "")).endswith(".so"))
agrees = None
if not compiled:
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs())
    torch.manual_seed(0)
    new = solution.ModelNew(*problem.get_init_inputs())
    x = problem.get_inputs()
    agrees = bool(torch.allclose(model(*x), new(*x), atol=1e-5))
print(json.dumps({"libraries": files, "compiled": compiled, "agrees": agrees}))
"""


def test_load_inline_calls_go_through_the_loader_after_docstring_and_future_imports() -> None:
    source = ('"""Doc."""\nfrom __future__ import annotations\n\nimport torch.utils.cpp_extension as cpp_extension\n'
              'from torch.utils.cpp_extension import load_inline\n\n'
              'a = load_inline("a", "int f();", functions=["f"])\n'
              'b = cpp_extension.load_inline(\n    "b", "int g();", functions=["g"])\n')
    rewritten = with_prebuilt_loader(source)
    tree = parse(rewritten)
    assert rewritten.startswith('"""Doc."""\nfrom __future__ import annotations\n')
    assert isinstance(tree.body[2], ast_function_def())
    calls = [line for line in rewritten.splitlines() if line.startswith(("a = ", "b = "))]
    assert calls == [f'a = {LOADER_NAME}("a", "int f();", functions=["f"])', f"b = {LOADER_NAME}("]
    compile(rewritten, "exported", "exec")


def test_a_solution_without_load_inline_is_left_as_it_is() -> None:
    source = "import torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    assert with_prebuilt_loader(source) == source


def ast_function_def() -> type:
    import ast

    return ast.FunctionDef


def _import(solution: Path, mode: str, tmp_path: Path) -> dict:
    empty = tmp_path / "torch-extensions"
    empty.mkdir(exist_ok=True)
    env = {"TORCH_EXTENSIONS_DIR": str(empty), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", _IMPORT_AND_CHECK, str(solution), str(PROBLEM), mode],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_exported_solution_loads_its_bundled_build_and_compiles_where_it_does_not_match(tmp_path: Path) -> None:
    out = tmp_path / "export" / "solution.py"
    exported = export_solution(HONEST.read_text(), "cpu", out)  # the usual cache: other tests built it
    assert exported.note == "" and exported.libraries == 1
    manifest = json.loads((out.parent / "build" / "manifest.json").read_text())
    assert [library["name"] for library in manifest["libraries"]] == ["kforge_test_leaky_scale"]

    loaded = _import(out, "real-compiler", tmp_path)
    assert loaded["compiled"] == [] and loaded["agrees"] is True
    assert len(loaded["libraries"]) == 1 and Path(loaded["libraries"][0]).is_relative_to(out.parent / "build")
    assert not any((tmp_path / "torch-extensions").iterdir())  # torch compiled nothing

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out.parent, elsewhere)
    manifest["machine"]["processor"] = "another processor"
    (elsewhere / "build" / "manifest.json").write_text(json.dumps(manifest))
    assert _import(elsewhere / "solution.py", "stub-compiler", tmp_path)["compiled"] == ["kforge_test_leaky_scale"]
