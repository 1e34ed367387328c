"""Partitioning whole forwards into kernels, and the composed solutions that run them.

The cut is checked twice: its decisions (which ops share a kernel, where views run), and its meaning: the
steps evaluated one after another with the IR's torch interpreter give what the reference model gives, on
every input set of the problem. The composed files are then judged by the real harness (Triton's CPU
interpreter for all of them, the C++ compiler for a few).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kforge.engine import ir
from kforge.engine.capture import LoweringError, capture
from kforge.engine.lower import plan
from kforge.engine.partition import Kernel, Partition, ViewStep, partition
from kforge.engine.propose import propose
from kforge.engine.standalone import is_standalone
from kforge.problem import Problem, load_problem
from kforge.verify.evaluate import evaluate
from kforge.verify.verdict import Outcome
from tests.conftest import PROBLEMS, fast_options

FOLDER = PROBLEMS / "engine"
GRAPHS = sorted(path.stem for path in FOLDER.glob("graph_*.py"))


def _parts(name: str) -> tuple[Problem, Partition]:
    problem = load_problem(FOLDER / f"{name}.py")
    return problem, partition(capture(problem).program)


def _run_steps(parts: Partition, inputs: list[torch.Tensor], params: dict[str, torch.Tensor],
               written: dict[str, torch.Tensor] | None = None) -> list[torch.Tensor]:
    """The partition's steps in order, each kernel through the IR interpreter, each view through `ir.apply`: the
    outputs the forward returns, and into `written` the new values of the buffers it writes."""
    env = {spec.name: tensor for spec, tensor in zip(parts.graph.inputs, inputs, strict=True)}
    env.update({spec.name: params[spec.name] for spec in parts.graph.params})
    for step in parts.steps:
        if isinstance(step, Kernel):
            [env[step.output]] = ir.evaluate(step.program, [env[s.name] for s in step.program.inputs], params)
        elif step.node.op in ir.COPY_OPS:
            env[step.output] = ir.apply(step.node, [env[str(arg)] for arg in step.node.args])
        else:
            env[step.output] = _view(step.node, env[str(step.node.args[0])])
    if written is not None:
        written.update({path: env[name] for path, name in parts.graph.written})
    return [env[name] for name in parts.graph.returned]


def _view(node: ir.Node, source: torch.Tensor) -> torch.Tensor:
    """A view step on any input set: its varying dim (at most one) left to reshape, as the composed file does."""
    if node.op != "view":
        return ir.apply(node, [source])
    return source.reshape([size if node.is_static(dim) else -1 for dim, size in enumerate(node.shape)])


def test_there_are_graph_problems() -> None:
    assert len(GRAPHS) >= 5


@pytest.mark.parametrize("name", GRAPHS)
def test_steps_in_order_compute_what_the_reference_computes(name: str) -> None:
    """The outputs, and the buffers the forward moves (a training-mode batch norm's statistics and count)."""
    problem, parts = _parts(name)
    model = problem.make_model(0)
    for inputs in problem.input_sets(3):
        if [t.dim() for t in inputs] != [len(spec.shape) for spec in parts.graph.inputs]:
            continue  # the IR's interpreter reads dims as the main input set numbers them
        params = {name: tensor.detach().clone() for name, tensor in (*model.named_parameters(),
                                                                      *model.named_buffers())}
        with torch.no_grad():
            expected = model(*inputs)
        expected = list(expected) if isinstance(expected, tuple) else [expected]
        written: dict[str, torch.Tensor] = {}
        got = _run_steps(parts, inputs, params, written)
        assert len(got) == len(expected)
        for value, reference in zip(got, expected, strict=True):
            torch.testing.assert_close(value, reference, rtol=1e-5, atol=1e-5)
        buffers = dict(model.named_buffers())
        assert set(written) == {path for path in buffers if "running" in path or "batches" in path} \
            if model.training else not written
        for path, value in written.items():
            torch.testing.assert_close(value.reshape(buffers[path].shape), buffers[path], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", GRAPHS)
def test_every_kernel_is_one_a_backend_can_plan_or_a_standalone_op(name: str) -> None:
    _, parts = _parts(name)  # as `plan` allows, with no backend's say (which may refuse an epilogue)
    assert len(parts.kernels) >= 2 or is_standalone(parts.kernels[0].program)
    for kernel in parts.kernels:
        lowered = plan(kernel.program)
        assert lowered.output == kernel.output
        if is_standalone(kernel.program):  # a pooling window, a scan, a mask...: first, then its epilogue
            assert lowered.reduction is not None and lowered.reduction.op in ir.STANDALONE_OPS and not lowered.pre
            assert all(node.shape == lowered.reduction.shape for node in lowered.post)
            continue
        assert not kernel.program.is_graph()
        heavy = [node for node in kernel.program.all_nodes() if node.op in ir.HEAVY_OPS]
        assert len(heavy) <= 1 and (not heavy or kernel.program.heavy is heavy[0])


def test_an_mlp_is_cut_at_each_gemm_and_its_two_outputs_end_kernels() -> None:
    _, parts = _parts("graph_mlp_two_heads")
    assert parts.summary() == "linear+relu | linear+tanh | linear | log_softmax"
    logits = parts.kernels[2]
    assert logits.output == parts.graph.outputs[0]  # returned, so no later op fuses into its kernel
    assert parts.kernels[3].program.inputs[0].name == logits.output


def test_a_flatten_between_a_convolution_and_a_linear_runs_in_python() -> None:
    _, parts = _parts("graph_conv_flatten_linear")
    kinds = [type(step).__name__ for step in parts.steps]
    assert kinds == ["Kernel", "ViewStep", "Kernel"]
    view = parts.steps[1]
    assert isinstance(view, ViewStep) and view.node.op == "view"
    assert parts.kernels[1].program.heavy is not None
    assert parts.kernels[1].program.heavy.args[0] == view.output


def test_slices_of_a_computed_value_are_read_in_place_by_one_fused_kernel() -> None:
    _, parts = _parts("graph_gru_like")
    assert not any(isinstance(step, ViewStep) for step in parts.steps)
    last = parts.kernels[-1].program
    assert [node.op for node in last.nodes if node.op == "slice"] == ["slice", "slice"]
    assert {"sigmoid", "tanh"} <= {node.op for node in last.nodes}
    gates = parts.kernels[1].output
    assert gates in {spec.name for spec in last.inputs}


def test_a_value_read_by_a_later_kernel_ends_its_own() -> None:
    _, parts = _parts("graph_gated_residual")
    first, second = parts.kernels
    assert first.program.heavy is not None and first.program.nodes == ()
    assert first.output in {spec.name for spec in second.program.inputs}
    assert {"sigmoid", "layer_norm"} <= {node.op for node in second.program.nodes}


def test_two_reductions_in_a_row_become_two_kernels() -> None:
    _, parts = _parts("graph_two_reductions")
    assert parts.summary() == "mul+softmax | mean+add"


def test_a_pointwise_node_joins_an_older_kernel_that_can_run_after_its_producers() -> None:
    # The scan's kernel is made after the one computing tanh(x) * 0.5, and the sum reads both. In C++, whose
    # scans take no epilogue, the sum joins the older kernel, which then runs after the scan, rather than
    # starting a third; in Triton it is the scan's epilogue.
    problem = load_problem(FOLDER / "graph_around_a_scan.py")
    assert propose(problem, "cpp", limit=1).program.notes[0] == "partitioned into 2 kernels: cumsum | tanh+mul+add"
    assert propose(problem, "triton", limit=1).program.notes[0] == "partitioned into 2 kernels: tanh+mul | cumsum+add"


def test_pointwise_work_on_a_standalone_result_is_its_epilogue_in_triton() -> None:
    # x + flip(x, -1) + flip(x, (1, 2)), times 0.5: each flip's kernel applies the add after it (reading the
    # other operand where it stores) in Triton; in C++ the flips stand alone and the adds make a kernel.
    problem = load_problem(FOLDER / "graph_flip_slices.py")
    triton_cut = propose(problem, "triton", limit=1)
    assert triton_cut.program.notes[0] == "partitioned into 3 kernels: flip+add | sub | flip+add+mul"
    assert propose(problem, "cpp", limit=1).kernels == 4
    source = triton_cut.variants[0].source
    assert "def _flip_k0(x_ptr, out_ptr, e_x, total," in source  # x, read in the flip's kernel where it stores
    assert "v_x = tl.load(e_x + offs, mask=mask, other=0.0)" in source


def test_a_problem_one_kernel_computes_is_not_partitioned() -> None:
    found = propose(load_problem(FOLDER / "linear_softmax.py"), "triton", limit=1)
    assert found.kernels == 1 and found.program.heavy is not None and not found.program.is_graph()


def test_returning_an_input_unchanged_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "echo.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return x, torch.relu(x)\n\n\n"
                    "def get_inputs():\n    return [torch.randn(4, 5)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    with pytest.raises(LoweringError, match="returns an input or a parameter unchanged") as caught:
        propose(load_problem(path), "cpp")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", GRAPHS)
def test_composed_triton_solution_is_correct_in_the_interpreter(tmp_path: Path, name: str) -> None:
    pytest.importorskip("triton", reason="Triton is not installed")
    found = propose(load_problem(FOLDER / f"{name}.py"), "triton", limit=2)
    assert found.kernels >= 2 and len(found.variants) >= 1
    assert found.program.notes[0].startswith(f"partitioned into {found.kernels} kernels")
    for index, variant in enumerate(found.variants):
        path = tmp_path / f"solution_{index}.py"
        path.write_text(variant.source)
        verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(language="triton", trials=1))
        assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{variant.source}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["graph_gru_like", "graph_pool_stem", "graph_scans", "graph_causal_attention",
                                  "graph_flip_slices"])
def test_composed_cpp_solution_builds_once_and_is_correct(tmp_path: Path, name: str) -> None:
    found = propose(load_problem(FOLDER / f"{name}.py"), "cpp", limit=1)
    source = found.variants[0].source
    assert source.count("load_inline(") == 1  # one extension for every kernel: the compiler runs once
    assert source.count("namespace k") == found.kernels * 2  # each opened and closed
    path = tmp_path / "solution.py"
    path.write_text(source)
    verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{source}"


@pytest.mark.gpu
@pytest.mark.parametrize("name", GRAPHS)
def test_composed_triton_solution_is_correct_on_the_gpu(tmp_path: Path, name: str) -> None:
    found = propose(load_problem(FOLDER / f"{name}.py"), "triton", limit=1)
    path = tmp_path / "solution.py"
    path.write_text(found.variants[0].source)
    verdict = evaluate(FOLDER / f"{name}.py", path, fast_options(platform="cuda", language="triton", trials=1))
    assert verdict.verdict == Outcome.CORRECT, f"{verdict.reason}\n{found.variants[0].source}"


def test_a_moved_module_reads_its_new_buffers(tmp_path: Path) -> None:
    """Moving or converting a module replaces its buffers (running statistics): the kernels read the new ones."""
    pytest.importorskip("triton", reason="Triton is not installed")
    problem = load_problem(FOLDER / "graph_batchnorm1d_eval.py")
    path = tmp_path / "solution.py"
    path.write_text(propose(problem, "triton", limit=1).variants[0].source)
    namespace: dict[str, object] = {}
    # The engine's own file, built (no kernel runs) in this test process: kforge itself never does this.
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    model = namespace["ModelNew"](*problem.init_inputs()).double()  # type: ignore[operator]
    held = [tensor for module in model.modules() for tensor in getattr(module, "params", ())]
    assert held and all(tensor.dtype == torch.float64 for tensor in held)
    assert any(tensor is model.reference.norm.running_mean for tensor in held)


def test_a_reduction_over_the_last_dims_is_one_kernel_over_their_merged_view() -> None:
    _, parts = _parts("graph_pool_stem")  # adaptive_avg_pool2d(y, 1): a mean over the last two dims
    assert parts.summary() == "conv2d+relu | max_pool | avg_pool | view | mean | view | view | linear"
    _, parts = _parts("graph_full_reductions")  # (x * y).sum(): all dims of a static shape, one reduction
    assert parts.summary().split(" | ").count("sum") == 1


def test_the_partition_note_lists_kernels_only_and_counts_the_views_apart() -> None:
    # graph_pool_stem's steps hold three views besides its five kernels: the note's list names the five.
    found = propose(load_problem(FOLDER / "graph_pool_stem.py"), "cpp", limit=1)
    head, listed = found.program.notes[0].split(": ", 1)
    kernels, between = listed.split(" (", 1)
    assert head == f"partitioned into {found.kernels} kernels" and len(kernels.split(" | ")) == found.kernels
    assert "view" not in kernels and between == "3 view(s) or slice(s) between them, done in Python)"


def test_a_partitioned_solution_is_the_same_text_under_any_hash_seed() -> None:
    """The store knows an attempt by its text: a resumed run must write the same variants again."""
    import subprocess
    import sys

    script = ("import hashlib; from kforge.problem import load_problem; from kforge.engine.propose import propose; "
              "problem = load_problem('benchmarks/engine_suite/net_prenorm_transformer_block.py'); "
              "c = propose(problem, 'triton', limit=1); "
              "print(hashlib.sha256(c.variants[0].source.encode()).hexdigest())")
    root = Path(__file__).resolve().parents[2]
    digests = {subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(digests) == 1


def test_helpers_the_kernels_share_are_written_once() -> None:
    source = propose(load_problem(FOLDER / "graph_mlp_two_heads.py"), "triton", limit=1).variants[0].source
    assert source.count("class _Direct") == 1 and source.count("def _direct(") == 1
    assert source.count("@_direct\n@triton.jit") == source.count("@triton.jit") >= 4


def test_a_helper_reading_a_kernels_own_definition_is_not_shared() -> None:
    from kforge import pyparse
    from kforge.engine.compose import _common_helpers

    def files(second_kernel: str) -> list:
        launch = "def _launch(x):\n    return _kernel(x)\n"
        return [pyparse.parse("def _kernel(x):\n    return x + 1\n" + launch),
                pyparse.parse(f"def _kernel(x):\n    return {second_kernel}\n" + launch)]

    # _launch reads each file's own _kernel: written once, it would call the first file's in both.
    assert _common_helpers(files("x + 2"), set()) == set()
    assert _common_helpers(files("x + 1"), set()) == {"_kernel", "_launch"}


def test_a_standalone_epilogue_reads_an_operand_that_broadcasts_on_another_input_set(tmp_path: Path) -> None:
    # Captured with `shift` in the pooled shape; the second input set gives it per channel. The kernel reads the
    # operand laid out in the output's shape on each call, so both sets are right.
    pytest.importorskip("triton", reason="Triton is not installed")
    problem = tmp_path / "pool_plus_operand.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Model(nn.Module):\n    def forward(self, x, shift):\n"
        "        return F.avg_pool2d(x, kernel_size=2) + shift\n\n\n"
        "def get_inputs():\n    return [torch.randn(2, 3, 8, 10), torch.randn(2, 3, 4, 5)]\n\n\n"
        "def get_input_variants():\n    return [[torch.randn(2, 3, 8, 10), torch.randn(1, 3, 1, 1)]]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    found = propose(load_problem(problem), "triton", limit=1)
    assert found.kernels == 1 and "_dense(a1, out.shape)" in found.variants[0].source
    path = tmp_path / "solution.py"
    path.write_text(found.variants[0].source)
    verdict = evaluate(problem, path, fast_options(language="triton", trials=2))
    assert verdict.verdict == Outcome.CORRECT, verdict.reason
