"""`kforge export RUN --out DIR --as-op NAME`: the run's kernel as `torch.ops.kforge.NAME`, used in a small model
in eager mode and under torch.compile (whole graph, the operator opaque): a C++ kernel with its library loaded from
the export, and a Triton kernel (through Triton's interpreter on the CPU, compiled on a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kforge.store import Store
from tests.test_cli import kforge

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "leaky_scale.py"
HONEST = ROOT / "candidates" / "leaky_scale" / "honest.py"
TRITON = ROOT / "candidates" / "leaky_scale" / "triton_honest.py"
BATCH_NORM = ROOT / "problems" / "engine" / "graph_batchnorm2d_train.py"

# A model with the exported layer between PyTorch layers, against the same model with the problem's reference
# in its place (same parameters): eager, torch.compile(fullgraph=True), and torch.library.opcheck.
_USE_IN_A_MODEL = r"""
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
device = sys.argv[2]
from leaky_scale_op import LeakyScale, _reference

class Net(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.pre = torch.nn.Linear(512, 512)
        self.layer = layer
    def forward(self, x):
        return self.layer(self.pre(x)).relu().sum(dim=1)

torch.manual_seed(0)
net = Net(LeakyScale(512))
reference = Net(_reference.Model(512))
reference.load_state_dict({"pre.weight": net.pre.weight, "pre.bias": net.pre.bias,
                           "layer.scale": net.layer.kernel.scale})
net, reference = net.to(device), reference.to(device)
x = torch.randn(256, 512, device=device)
with torch.no_grad():
    expected = reference(x)
    eager = net(x)
    compiled = torch.compile(net, fullgraph=True, backend="aot_eager")(x)
checks = torch.library.opcheck(torch.ops.kforge.leaky_scale.default,
                               ([x], [net.layer.kernel.scale.detach()], [], net.layer._number))
extension = getattr(sys.modules["_kforge_leaky_scale_solution"], "ext", None)
library = extension.__file__ if extension is not None else None
print(json.dumps({"eager": bool(torch.allclose(eager, expected, atol=1e-4)),
                  "compiled": bool(torch.allclose(compiled, expected, atol=1e-4)),
                  "opcheck": sorted(set(checks.values())), "library": library}))
"""


def _run_with_best(db: Path, source: str, platform: str = "cpu", language: str = "cpp",
                   problem: Path = PROBLEM) -> int:
    with Store(db) as store:
        run = store.create_run(command="optimize", problem_path=str(problem), platform=platform, language=language,
                               model="builtin")
        attempt = store.record_attempt(run.id, source=source, language=language, platform=platform,
                                       made_by="builtin", round=0)
        store.record_evaluation(attempt.id, {"verdict": "correct", "runtime_ms": 1.0})
        return run.id


@pytest.mark.slow
def test_export_as_op_gives_an_operator_usable_in_a_model_and_under_torch_compile(tmp_path: Path) -> None:
    db, out = tmp_path / "runs.db", tmp_path / "export"
    run_id = _run_with_best(db, HONEST.read_text())
    exported = kforge("export", str(run_id), "--db", db, "--out", out, "--as-op", "leaky_scale")
    assert exported.returncode == 0, exported.stderr
    assert {path.name for path in out.iterdir()} == {"solution.py", "build", "problem.py", "leaky_scale_op.py",
                                                     "run.json"}
    used = subprocess.run([sys.executable, "-c", _USE_IN_A_MODEL, str(out), "cpu"], capture_output=True, text=True,
                          timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                            "TORCH_EXTENSIONS_DIR": str(tmp_path / "no-builds-here")})
    assert used.returncode == 0, used.stderr[-3000:]
    result = json.loads(used.stdout.splitlines()[-1])
    assert result["eager"] and result["compiled"]
    assert result["opcheck"] == ["SUCCESS"]
    assert Path(result["library"]).is_relative_to(out / "build")


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_export_as_op_of_a_triton_kernel_works_in_a_model_and_under_torch_compile(tmp_path: Path,
                                                                                   platform: str) -> None:
    db, out = tmp_path / "runs.db", tmp_path / "export"
    run_id = _run_with_best(db, TRITON.read_text(), platform=platform, language="triton")
    exported = kforge("export", str(run_id), "--db", db, "--out", out, "--as-op", "leaky_scale")
    assert exported.returncode == 0, exported.stderr
    assert {path.name for path in out.iterdir()} == {"solution.py", "problem.py", "leaky_scale_op.py", "run.json"}
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if platform == "cpu":
        env["TRITON_INTERPRET"] = "1"  # what the cpu platform sets for Triton kernels
    used = subprocess.run([sys.executable, "-c", _USE_IN_A_MODEL, str(out), platform], capture_output=True,
                          text=True, timeout=600, env=env)
    assert used.returncode == 0, used.stderr[-3000:]
    result = json.loads(used.stdout.splitlines()[-1])
    assert result["eager"] and result["compiled"]
    assert result["opcheck"] == ["SUCCESS"]
    assert result["library"] is None


# The engine's batch norm as an operator beside the reference: in training mode (outputs, and the running statistics
# moved), after .eval() (normalized with those), and again in training mode under torch.compile (the operator's
# writes to the buffers kept).
_BATCH_NORM_OP = r"""
import json, sys
import torch
sys.path.insert(0, sys.argv[1])
from norm_op import Norm, _reference

layer = Norm(2, 5)
reference = _reference.Model(2, 5)
reference.load_state_dict(layer.kernel.reference.state_dict())
inputs = [torch.randn(3, 2, 7, 6) for _ in range(3)]

def same(a, b):
    return bool(torch.allclose(a, b, rtol=1e-3, atol=1e-4))

def same_buffers():
    held = dict(layer.kernel.named_buffers())
    return all(same(held["reference." + name].float(), buffer.float()) for name, buffer in reference.named_buffers())

with torch.no_grad():
    trained = all(same(layer(x), reference(x)) for x in inputs) and same_buffers()
    layer.eval(); reference.eval()
    evaluated = all(same(layer(x), reference(x)) for x in inputs) and same_buffers()
    layer.train(); reference.train()
    compiled = same(torch.compile(layer, fullgraph=True, backend="aot_eager")(inputs[0]), reference(inputs[0]))
print(json.dumps({"trained": trained, "evaluated": evaluated, "compiled": compiled and same_buffers(),
                  "count": int(reference.norm.num_batches_tracked)}))
"""


@pytest.mark.slow
def test_an_exported_batch_norm_moves_its_running_statistics_and_follows_eval(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    from kforge.engine.propose import propose
    from kforge.problem import load_problem

    source = propose(load_problem(BATCH_NORM), "triton", limit=1).variants[0].source
    db, out = tmp_path / "runs.db", tmp_path / "export"
    run_id = _run_with_best(db, source, language="triton", problem=BATCH_NORM)
    exported = kforge("export", str(run_id), "--db", db, "--out", out, "--as-op", "norm")
    assert exported.returncode == 0, exported.stderr
    used = subprocess.run([sys.executable, "-c", _BATCH_NORM_OP, str(out)], capture_output=True, text=True,
                          timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TRITON_INTERPRET": "1"})
    assert used.returncode == 0, used.stderr[-3000:]
    assert json.loads(used.stdout.splitlines()[-1]) == {"trained": True, "evaluated": True, "compiled": True,
                                                        "count": 4}


@pytest.mark.parametrize(("arguments", "message"), [
    (["--as-op", "2fast"], "--as-op needs a Python identifier"),
    (["--as-op", "ok_name"], "has no correct solution to make an operator of"),
])
def test_export_refuses_what_it_cannot_make_with_exit_2(tmp_path: Path, arguments: list[str], message: str) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        run_id = store.create_run(command="optimize", problem_path=str(PROBLEM), platform="cpu").id
    refused = kforge("export", str(run_id), "--db", db, "--out", tmp_path / "out", *arguments)
    assert refused.returncode == 2
    assert message in refused.stderr
