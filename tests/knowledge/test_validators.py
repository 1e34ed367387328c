"""Each static validator flags a bad candidate and passes a good one; honest solutions raise no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kforge.knowledge import DeviceLimits, Violation, load_knowledge
from kforge.knowledge.source import CandidateSource
from kforge.knowledge.validators import VALIDATORS, run_validator

ROOT = Path(__file__).parents[2]
H200 = DeviceLimits.defaults("cuda", "NVIDIA H200")
GENERIC_CUDA = DeviceLimits.defaults("cuda")
MAX1550 = DeviceLimits.defaults("xpu", "Intel(R) Data Center GPU Max 1550")
APPLE = DeviceLimits.defaults("mps")
MI300X = DeviceLimits.defaults("rocm", "AMD Instinct MI300X")
ARC = DeviceLimits.defaults("xpu", "Intel(R) Arc(TM) A770 Graphics")


def messages(name: str, source: str, limits: DeviceLimits = H200) -> list[str]:
    return [finding.message for finding in run_validator(name, CandidateSource(source), limits)]


def cuda_source(kernels: str, extra: str = "") -> str:
    return f'from torch.utils.cpp_extension import load_inline\n{extra}\n_SRC = r"""\n{kernels}\n"""\n'


TRITON_HEAD = "import triton\nimport triton.language as tl\n\n"


# --- Triton -------------------------------------------------------------------------------------------------


def test_num_warps_must_be_a_power_of_two_within_the_limit() -> None:
    bad = TRITON_HEAD + """
CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=w, num_stages=0) for w in (4, 6, 64)]
"""
    found = messages("triton_num_warps", bad)
    assert any("num_warps=6" in m and "power of two" in m for m in found)
    assert any("num_warps=64" in m and "exceeds" in m for m in found)
    assert any("num_stages=0" in m for m in found)
    assert not any("num_warps=4 " in m for m in found)
    good = TRITON_HEAD + "def run(x):\n    kernel[(1,)](x, BLOCK=128, num_warps=8, num_stages=3)\n"
    assert messages("triton_num_warps", good) == []


def test_launch_keywords_and_module_constants_are_seen() -> None:
    source = TRITON_HEAD + "WARPS = 12\n\ndef run(x):\n    kernel[(1,)](x, num_warps=WARPS)\n"
    assert any("num_warps=12" in m for m in messages("triton_num_warps", source))
    unknown = TRITON_HEAD + "def run(x, w):\n    kernel[(1,)](x, num_warps=w)\n"
    assert messages("triton_num_warps", unknown) == []  # a run-time value is not guessed


ARANGE_KERNEL = TRITON_HEAD + """
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr, HALF: tl.constexpr = 32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    pair = tl.arange(0, HALF * 2)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

def run(x):
    scale[(4,)](x, x.numel(), BLOCK={block})
"""


def test_arange_span_must_be_a_power_of_two() -> None:
    found = messages("triton_block_power_of_two", ARANGE_KERNEL.format(block=96))
    assert len(found) == 1 and "96 elements" in found[0] and "from line 12" in found[0]
    assert messages("triton_block_power_of_two", ARANGE_KERNEL.format(block=128)) == []
    assert messages("triton_block_power_of_two", ARANGE_KERNEL.format(block="triton.next_power_of_2(n)")) == []


def test_arange_values_from_autotune_configs() -> None:
    source = TRITON_HEAD + """
@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (64, 100)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
"""
    found = messages("triton_block_power_of_two", source)
    assert len(found) == 1 and "100 elements" in found[0]


def test_dot_tiles_that_cannot_fit_shared_memory_warn() -> None:
    source = TRITON_HEAD + """
@triton.autotune(configs=[triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": {k}}, num_stages=4)], key=[])
@triton.jit
def mm(a, b, c, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    acc = tl.dot(tl.load(a), tl.load(b))
"""
    big = messages("triton_shared_memory", source.replace("{k}", "128"))
    assert len(big) == 1 and "BLOCK_K=128" in big[0]
    assert messages("triton_shared_memory", source.replace("{k}", "16")) == []


# --- CUDA ---------------------------------------------------------------------------------------------------


def test_threads_per_block_from_dim3_and_constants() -> None:
    bad = cuda_source("""
constexpr int kSide = 64;
__global__ void k(float* y) {}
void launch(float* y, cudaStream_t s) {
    dim3 block(kSide, kSide);
    k<<<1, block, 0, s>>>(y);
    k<<<1, dim3(32, 2, 128), 0, s>>>(y);
}
""")
    found = messages("cuda_threads_per_block", bad)
    assert any("4096 threads" in m for m in found)
    assert any("dimension z is 128" in m for m in found)
    good = cuda_source("""
#define THREADS 256
__global__ void __launch_bounds__(THREADS) k(float* y) {}
void launch(float* y, cudaStream_t s) { k<<<10, THREADS, 0, s>>>(y); }
""")
    assert messages("cuda_threads_per_block", good) == []


def test_launch_bounds_above_the_limit() -> None:
    source = cuda_source("__global__ void __launch_bounds__(2048) k(float* y) {}")
    assert any("__launch_bounds__(2048)" in m for m in messages("cuda_threads_per_block", source))


def test_static_shared_memory_over_48_kib() -> None:
    bad = cuda_source("""
#define TILE 128
__global__ void k(float* y) {
    __shared__ float a[TILE][TILE + 1];   // 66 KiB
}
""")
    found = messages("cuda_shared_memory", bad)
    assert len(found) == 1 and "static" in found[0]
    good = cuda_source("""
constexpr int TILE = 32;
__global__ void k(float* y) { __shared__ float a[TILE][TILE + 1], b[TILE][TILE + 1]; }
__global__ void other(float* y) { __shared__ double c[2048]; }
""")
    assert messages("cuda_shared_memory", good) == []  # 8.25 KiB and 16 KiB, counted per kernel


def test_dynamic_shared_memory_needs_the_opt_in() -> None:
    kernels = """
__global__ void k(float* y) {{ extern __shared__ float buf[]; }}
void launch(float* y, cudaStream_t s) {{ {setup} k<<<1, 256, 100 * 1024, s>>>(y); }}
"""
    missing = run_validator("cuda_shared_memory", CandidateSource(cuda_source(kernels.format(setup=""))), H200)
    assert len(missing) == 1 and missing[0].severity == "warning" and "cudaFuncSetAttribute" in missing[0].message
    opted = "cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024);"
    assert messages("cuda_shared_memory", cuda_source(kernels.format(setup=opted))) == []
    too_big = kernels.format(setup=opted).replace("100 * 1024", "240 * 1024")
    assert any("allows 227 KiB" in m for m in messages("cuda_shared_memory", cuda_source(too_big)))


def test_default_stream_launch_warns() -> None:
    source = cuda_source("""
#include <torch/extension.h>
__global__ void k(float* y) {}
void launch(torch::Tensor y) { k<<<1, 32>>>(y.data_ptr<float>()); }
""")
    assert any("default stream" in m for m in messages("cuda_current_stream", source))


def test_comments_and_docstrings_are_not_code() -> None:
    source = '"""Uses __shared__ float big[65536]; in prose."""\n' + cuda_source(
        "// __shared__ float big[65536];\n__global__ void k(float* y) {}")
    assert messages("cuda_shared_memory", source) == []


# --- Metal --------------------------------------------------------------------------------------------------


def test_metal_threadgroup_memory() -> None:
    kernel = """
#include <metal_stdlib>
using namespace metal;
constant constexpr int N = {n};
kernel void reduce(device const float* x [[buffer(0)]], uint tid [[thread_position_in_threadgroup]]) {{
    threadgroup float part[N];
    threadgroup half4 extra[256];
}}
"""
    found = messages("metal_threadgroup_memory", cuda_source(kernel.format(n=8192)), APPLE)
    assert len(found) == 1 and "34 KiB" in found[0]
    assert messages("metal_threadgroup_memory", cuda_source(kernel.format(n=1024)), APPLE) == []


def test_metal_threads_per_threadgroup() -> None:
    source = cuda_source("[[max_total_threads_per_threadgroup(2048)]] kernel void k() {}")
    assert messages("metal_threads_per_threadgroup", source, APPLE)
    assert not messages("metal_threads_per_threadgroup", source.replace("2048", "512"), APPLE)


# --- Intel XPU ----------------------------------------------------------------------------------------------


def test_intel_warps_and_sub_groups() -> None:
    bad = TRITON_HEAD + ("def run(x):\n    k[(1,)](x, num_warps=64, warp_size=32)\n"
                         "    k[(1,)](x, num_warps=8, warp_size=8)\n")
    found = messages("intel_warps", bad, MAX1550)
    assert any("2048 work-items" in m for m in found)
    assert any("sub-group size of 8" in m for m in found)
    good = TRITON_HEAD + "def run(x):\n    k[(1,)](x, num_warps=64, warp_size=16)\n"
    assert messages("intel_warps", good, MAX1550) == []


def test_intel_grf_mode_values_and_warps() -> None:
    source = TRITON_HEAD + """
CONFIGS = [
    triton.Config({"BLOCK": 64, "grf_mode": "huge"}, num_warps=8),
    triton.Config({"BLOCK": 64, "grf_mode": "256"}, num_warps=64),
    triton.Config({"BLOCK": 64, "grf_mode": "256"}, num_warps=32),
]
"""
    found = run_validator("intel_grf_mode", CandidateSource(source), MAX1550)
    assert [f.line for f in found] == [6, 7]
    assert "'huge'" in found[0].message and "num_warps=64" in found[1].message


def test_intel_grf_mode_accepts_the_current_strings_only() -> None:
    def found(value: str) -> list[str]:
        return messages("intel_grf_mode", TRITON_HEAD + f"def run(x):\n    k[(1,)](x, grf_mode={value})\n", MAX1550)

    for accepted in ('"default"', '"auto"', '"128"', '"256"'):
        assert found(accepted) == [], accepted
    assert "not a string" in found("256")[0] and "grf_mode='256'" in found("256")[0]
    assert "old name of '256'" in found('"large"')[0]
    assert "old name of '128'" in found('"small"')[0]
    assert "not accepted" in found('"512"')[0]


def test_intel_slm_estimate() -> None:
    source = TRITON_HEAD + """
import torch  # bfloat16 inputs
@triton.jit
def mm(a, b, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.dot(tl.load(a), tl.load(b))

def run(a, b):
    mm[(1,)](a, b, BM=512, BN=512, BK=64, num_stages=2)
"""
    assert messages("intel_slm", source, MAX1550)
    assert not messages("intel_slm", source.replace("BK=64", "BK=16"), MAX1550)


# --- HIP on AMD ---------------------------------------------------------------------------------------------


def test_wavefront_of_64_limits_and_warnings() -> None:
    assert MI300X.warp_size == 64 and MI300X.max_num_warps == 16 and MI300X.multiprocessors == 304
    launch = cuda_source("__global__ void k(float* x) {}\nvoid run(torch::Tensor t) { k<<<8, 96, 0, s>>>(p); }")
    found = messages("cuda_threads_per_block", launch, MI300X)
    assert any("not a multiple of the warp size 64" in m for m in found)
    assert messages("cuda_threads_per_block", launch.replace("96", "128"), MI300X) == []


SHUFFLE_TREE = """
__device__ float total(float v) {
    for (int offset = %d; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    return v;
}"""


def test_shuffle_trees_written_for_32_lanes_are_caught() -> None:
    assert "start at 32" in messages("hip_wavefront", cuda_source(SHUFFLE_TREE % 16), MI300X)[0]
    assert messages("hip_wavefront", cuda_source(SHUFFLE_TREE % 32), MI300X) == []
    masked = cuda_source("__device__ float f(float v) { return __shfl_xor_sync(0xffffffff, v, 1); }")
    found = run_validator("hip_wavefront", CandidateSource(masked), MI300X)
    assert found[0].severity == "warning" and "64-bit" in found[0].message
    assert messages("hip_wavefront", cuda_source(SHUFFLE_TREE % 16), H200) == []  # 32-lane warps: nothing to say


def test_hip_launches_name_the_rocm_stream() -> None:
    source = cuda_source("#include <torch/extension.h>\n__global__ void k() {}\nvoid f() { k<<<1, 64>>>(); }")
    assert "getCurrentHIPStreamMasqueradingAsCUDA" in messages("hip_current_stream", source, MI300X)[0]


# --- SYCL on Intel ------------------------------------------------------------------------------------------


SYCL_KERNEL = """
#include <c10/xpu/XPUStream.h>
torch::Tensor f(torch::Tensor x) {{
    const int64_t group = {group};
    sycl::queue& queue = {queue};
    queue.submit([&](sycl::handler& h) {{ h.parallel_for<K>(sycl::nd_range<1>(n * group, group), K{{}}); }});
    return x;
}}
struct [[sycl::reqd_sub_group_size({width})]] K {{}};
"""


def sycl_source(group: int = 256, width: int = 16, queue: str = "c10::xpu::getCurrentXPUStream().queue()") -> str:
    return cuda_source(SYCL_KERNEL.format(group=group, width=width, queue=queue))


def test_sycl_work_groups_and_sub_groups_fit_the_device() -> None:
    assert messages("sycl_work_group", sycl_source(), ARC) == []
    assert "2048 work-items" in messages("sycl_work_group", sycl_source(group=2048), ARC)[0]
    assert "reqd_sub_group_size(64)" in messages("sycl_work_group", sycl_source(width=64), ARC)[0]
    assert messages("sycl_work_group", sycl_source(width=8), ARC) == []  # Arc A-series offers 8-wide sub-groups
    assert messages("sycl_work_group", sycl_source(width=8), MAX1550)  # the Max 1550 does not


def test_sycl_kernels_go_to_pytorchs_queue() -> None:
    assert messages("sycl_current_queue", sycl_source(), ARC) == []
    own = sycl_source(queue="*new sycl::queue()")
    assert "getCurrentXPUStream" in messages("sycl_current_queue", own, ARC)[0]


# --- CPU ----------------------------------------------------------------------------------------------------


CPP = '''from torch.utils.cpp_extension import load_inline
_SRC = r"""
#include <torch/extension.h>
torch::Tensor f(torch::Tensor x) {{
    {pragma}
    for (int64_t i = 0; i < x.numel(); ++i) {{ }}
    return x;
}}
"""
_ext = load_inline(name="f", cpp_sources=_SRC, functions=["f"], extra_cflags=[{flags}])
'''


def test_openmp_pragmas_need_the_flag() -> None:
    missing = CPP.format(pragma="#pragma omp parallel for", flags='"-O3"')
    assert messages("cpu_openmp_flags", missing)
    assert not messages("cpu_openmp_flags", CPP.format(pragma="#pragma omp parallel for", flags='"-O3", "-fopenmp"'))


def test_serial_loops_warn() -> None:
    assert messages("cpu_parallel_loops", CPP.format(pragma="", flags='"-O3"'))
    assert not messages("cpu_parallel_loops", CPP.format(pragma="#pragma omp parallel for", flags='"-fopenmp"'))


# --- the whole check ----------------------------------------------------------------------------------------


def test_every_registered_validator_is_used_by_some_target() -> None:
    from kforge.knowledge import targets
    used = {c.validator for t in targets() for c in load_knowledge(*t).constraints}
    assert set(VALIDATORS) <= used


HONEST = sorted(ROOT.glob("examples/*/solution_*.py")) + sorted(ROOT.glob("src/kforge/data/examples/*/*/solution.py"))
TARGET = {"cpp": ("cpu", "cpp"), "cuda": ("cuda", "cuda"), "triton": ("cuda", "triton")}


@pytest.mark.parametrize("path", HONEST, ids=lambda p: str(p.relative_to(ROOT)))
def test_honest_solutions_raise_no_error(path: Path) -> None:
    """Bundled solutions on an H200; each single-shot example (data/examples/<platform>/<language>/) on its own
    platform's generic device."""
    if path.stem == "solution":
        platform, language, device = path.parent.parent.name, path.parent.name, None
    else:
        (platform, language), device = TARGET[path.stem.removeprefix("solution_")], "H200"
    violations = load_knowledge(platform, language).check(path.read_text(), DeviceLimits.defaults(platform, device))
    assert [v for v in violations if v.severity == "error"] == []


def test_check_reports_violations_tied_to_constraints_errors_first() -> None:
    source = ARANGE_KERNEL.format(block=96).replace("BLOCK=96)", "BLOCK=96, num_warps=3)")
    violations = load_knowledge("cuda", "triton").check(source, H200)
    assert {v.constraint_id for v in violations} == {"triton-num-warps", "triton-arange-power-of-two"}
    assert all(isinstance(v, Violation) and v.severity == "error" for v in violations)
    assert [(v.constraint_id, v.line) for v in violations] == [("triton-arange-power-of-two", 7),
                                                               ("triton-num-warps", 12)]


def test_unparsable_candidate_is_one_error() -> None:
    violations = load_knowledge("cuda", "cuda").check("def broken(:\n", GENERIC_CUDA)
    assert len(violations) == 1 and violations[0].constraint_id == "python_syntax" and violations[0].line == 1
