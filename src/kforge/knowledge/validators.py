"""Static checks of a candidate against a device's limits, registered by the id the data files name.

Every validator reads literal values only (see `source.py`, `cpp_scan.py`, `triton_scan.py`): a size
computed at run time, a template parameter or a value passed in from a helper is invisible to it, so a
clean report means "nothing wrong that can be seen without compiling", not "will launch".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import kforge.knowledge.cpp_scan as cpp_scan
from kforge.knowledge.limits import DeviceLimits
from kforge.knowledge.source import CandidateSource, CodeString
from kforge.knowledge.triton_scan import Settings, is_power_of_two
from kforge.knowledge.violations import Finding

Validator = Callable[[CandidateSource, DeviceLimits], list[Finding]]
VALIDATORS: dict[str, Validator] = {}

#: Triton's cap on the elements of one block (triton._utils.TRITON_MAX_TENSOR_NUMEL)
_MAX_TENSOR_NUMEL = 1 << 20
_STATIC_SHARED_DEFAULT = 48 * 1024
#: Intel register-file modes that double the registers per thread (and halve the threads an Xe-core holds)
_LARGE_GRF_MODES = frozenset({"256", "512"})
#: names older Intel Triton releases took, and what current releases call them
_OLD_GRF_NAMES = {"large": "256", "small": "128"}
#: a warp-shuffle loop's first offset: `for (int offset = 16; offset > 0; offset /= 2)` and its spellings
_SHUFFLE_TREE = re.compile(r"for\s*\(\s*(?:(?:unsigned\s+)?int\s+|auto\s+)?\w+\s*=\s*(\d+)\s*;[^;]*;"
                           r"[^)]*(?:>>=\s*1|/=\s*2)")
_NARROW_MASK = re.compile(r"(__(?:shfl\w*|ballot|any|all)_sync)\s*\(\s*0x[fF]{8}\b")


def validator(name: str) -> Callable[[Validator], Validator]:
    def register(function: Validator) -> Validator:
        VALIDATORS[name] = function
        return function
    return register


def run_validator(name: str, view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    return VALIDATORS[name](view, limits)


def _kib(size: int) -> str:
    return f"{size / 1024:g} KiB"


# --- Triton -------------------------------------------------------------------------------------------------


@validator("triton_num_warps")
def triton_num_warps(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """num_warps in each triton.Config and launch is a power of two within the device's limit; num_stages >= 1.

    Cannot see values computed at run time (e.g. `num_warps=pick(n)`).
    """
    found = []
    for setting, warps in _option_values(view, "num_warps"):
        found += _warps_findings(setting, warps, limits.max_num_warps)
    for setting, stages in _option_values(view, "num_stages"):
        found += [Finding(f"num_stages={s} at line {setting.line}: the software pipeline needs at least one stage",
                          setting.line) for s in sorted(stages) if s < 1]
    return found


@validator("triton_block_power_of_two")
def triton_block_power_of_two(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Each `tl.arange(start, end)` spans a power of two (and at most 2**20) elements, for every known value.

    Values come from literals, module constants, parameter defaults, launch keywords and the kernel's
    autotune configs; `triton.next_power_of_2(n)` and other run-time values are not seen.
    """
    triton = view.triton
    if triton is None:
        return []
    found: dict[tuple[int, int], Finding] = {}
    for kernel in triton.kernels.values():
        aranges = [node for node in ast.walk(kernel) if isinstance(node, ast.Call)
                   and _call_name(node.func) == "arange" and len(node.args) == 2]
        for env, origin in triton.bindings(kernel):
            where = f" (values from line {origin})" if origin else ""
            for call in aranges:
                span = triton.values(ast.BinOp(call.args[1], ast.Sub(), call.args[0]), env)
                for size in sorted(span or ()):
                    if not is_power_of_two(size):
                        found.setdefault((call.lineno, size), Finding(
                            f"tl.arange in {kernel.name} spans {size} elements{where}; Triton needs a power of two "
                            f"(round up with triton.next_power_of_2 and mask the tail)", call.lineno))
                    elif size > _MAX_TENSOR_NUMEL:
                        found.setdefault((call.lineno, size), Finding(
                            f"tl.arange in {kernel.name} spans {size} elements{where}; a Triton block holds at most "
                            f"{_MAX_TENSOR_NUMEL}", call.lineno))
    return list(found.values())


@validator("triton_shared_memory")
def triton_shared_memory(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Estimated shared memory of the tiles a `tl.dot` loop stages, against the per-block maximum.

    The estimate is (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * element bytes * num_stages, from constexpr
    parameters named like BLOCK_M/BLOCK_SIZE_N/BK; the compiler's real figure differs (layout
    conversions, reductions and epilogues also take shared memory), so this only warns.
    """
    return _dot_staging(view, limits.max_shared_memory_per_block, "shared memory per block")


# --- CUDA C++ ------------------------------------------------------------------------------------------------


@validator("cuda_threads_per_block")
def cuda_threads_per_block(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Literal block shapes in `<<<grid, block>>>` (inline, `dim3` variables, constants) and
    `__launch_bounds__(N)` stay within the device's threads per block and per-dimension limits.

    Cannot see block sizes computed at run time or passed in from Python.
    """
    found = []
    limit = limits.max_threads_per_block
    for string in view.strings_containing("<<<"):
        dim3s = cpp_scan.dim3_values(string.text)
        for launch in cpp_scan.launches(string.text):
            if len(launch.config) < 2:
                continue
            shape = cpp_scan.block_shape(launch.config[1], dim3s, view.cpp_constants)
            if shape is None:
                continue
            threads = 1
            for extent in shape:
                threads *= extent
            line = string.line_of(launch.offset)
            if limit is not None and threads > limit:
                found.append(Finding(f"{launch.kernel} is launched with {threads} threads per block "
                                     f"({' x '.join(map(str, shape))}); the device allows {limit}", line))
            if limits.max_block_dims is not None:
                for axis, extent, most in zip("xyz", shape, limits.max_block_dims, strict=False):
                    if extent > most:
                        found.append(Finding(f"{launch.kernel}: block dimension {axis} is {extent}; the device "
                                             f"allows {most}", line))
            if limits.warp_size and threads % limits.warp_size:
                found.append(Finding(f"{launch.kernel} is launched with {threads} threads per block, not a multiple "
                                     f"of the warp size {limits.warp_size}: the last warp runs partly idle", line,
                                     "warning"))
    for string in view.strings_containing("__launch_bounds__"):
        for match in re.finditer(r"__launch_bounds__\s*\(([^,()]+(?:\([^()]*\)[^,()]*)*)", string.text):
            bound = view.cpp_constants.evaluate(match.group(1))
            if bound is not None and limit is not None and bound > limit:
                found.append(Finding(f"__launch_bounds__({bound}) exceeds the device's {limit} threads per block",
                                     string.line_of(match.start())))
    return found


@validator("cuda_shared_memory")
def cuda_shared_memory(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Static `__shared__` arrays per kernel fit the 48 KiB static limit and the per-block maximum; a launch
    asking for more than 48 KiB of dynamic shared memory needs cudaFuncSetAttribute (warning when no call
    appears), and static plus dynamic must fit the per-block maximum.

    Arrays sized by template parameters, unknown types or run-time values are not counted; shared
    arrays declared in `__device__` helpers are not attributed to the kernels that call them.
    """
    found: list[Finding] = []
    static_limit = limits.max_static_shared_memory or _STATIC_SHARED_DEFAULT
    most = limits.max_shared_memory_per_block
    static_by_kernel: dict[str, int] = {}
    for string in view.strings_containing("__shared__"):
        for name, total, offset in _static_arrays(string, "__shared__", "__global__", view.cpp_constants):
            static_by_kernel[name] = static_by_kernel.get(name, 0) + total
            line = string.line_of(offset)
            if total > static_limit:
                found.append(Finding(f"{name} declares {_kib(total)} of static __shared__ memory; static shared "
                                     f"memory is limited to {_kib(static_limit)} per block (use extern __shared__ "
                                     f"with cudaFuncSetAttribute for more)", line))
            elif most is not None and total > most:
                found.append(Finding(f"{name} declares {_kib(total)} of __shared__ memory; the device allows "
                                     f"{_kib(most)} per block", line))
    opted_in = any("cudaFuncSetAttribute" in s.text or "cudaFuncAttributeMaxDynamicSharedMemorySize" in s.text
                   for s in view.native_strings)
    for string in view.strings_containing("<<<"):
        for launch in cpp_scan.launches(string.text):
            dynamic = view.cpp_constants.evaluate(launch.config[2]) if len(launch.config) > 2 else None
            if not dynamic:
                continue
            line = string.line_of(launch.offset)
            total = dynamic + static_by_kernel.get(launch.kernel, 0)
            if most is not None and total > most:
                found.append(Finding(f"{launch.kernel} asks for {_kib(total)} of shared memory (dynamic "
                                     f"{_kib(dynamic)}); the device allows {_kib(most)} per block", line))
            elif dynamic > static_limit and not opted_in:
                found.append(Finding(f"{launch.kernel} asks for {_kib(dynamic)} of dynamic shared memory without a "
                                     f"cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...) "
                                     f"call: launches above {_kib(static_limit)} fail without it", line, "warning"))
    return found


@validator("cuda_current_stream")
def cuda_current_stream(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Kernels launched from a torch extension pass PyTorch's current stream as the fourth `<<<>>>` argument.

    Only looks at launches in strings that also mention torch (a standalone CUDA program is exempt).
    """
    return _default_stream_launches(view, "at::cuda::getCurrentCUDAStream()")


@validator("hip_current_stream")
def hip_current_stream(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """As `cuda_current_stream`, for HIP built by torch for ROCm (whose current stream has its own name)."""
    return _default_stream_launches(view, "at::hip::getCurrentHIPStreamMasqueradingAsCUDA()")


def _default_stream_launches(view: CandidateSource, current: str) -> list[Finding]:
    found = []
    for string in view.strings_containing("<<<"):
        if "torch" not in string.text and "at::" not in string.text and "c10" not in string.text:
            continue
        for launch in cpp_scan.launches(string.text):
            if len(launch.config) < 4:
                found.append(Finding(f"{launch.kernel} is launched on the default stream; pass {current} so it "
                                     f"orders with PyTorch's work", string.line_of(launch.offset)))
    return found


# --- HIP on AMD GPUs ----------------------------------------------------------------------------------------


@validator("hip_wavefront")
def hip_wavefront(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Warp-level code written for 32 lanes: a shuffle tree that starts at offset 16 (it combines each half of a
    64-lane wavefront separately) and 32-bit lane masks (HIP's masks and ballots are 64-bit on CDNA).

    Only literal offsets are seen; a tree that starts at `warpSize / 2` is right on both.
    """
    lanes = limits.warp_size or 64
    if lanes < 64:
        return []
    found = []
    for string in view.strings_containing("__shfl"):
        for match in _SHUFFLE_TREE.finditer(string.text):
            if int(match.group(1)) < lanes // 2:
                found.append(Finding(f"a shuffle loop starts at offset {match.group(1)}: a wavefront has {lanes} "
                                     f"lanes, so the tree must start at {lanes // 2} (warpSize / 2) or each part "
                                     f"is reduced on its own", string.line_of(match.start())))
        for match in _NARROW_MASK.finditer(string.text):
            found.append(Finding(f"{match.group(1)} with the 32-bit mask 0xffffffff: lane masks are 64-bit on "
                                 f"{lanes}-lane wavefronts (use __shfl_down without a mask, or a 64-bit mask)",
                                 string.line_of(match.start()), "warning"))
    return found


# --- SYCL on Intel GPUs -------------------------------------------------------------------------------------


@validator("sycl_work_group")
def sycl_work_group(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Literal work-group sizes (the local range of an `nd_range`, `reqd_work_group_size`) fit the device, and
    `reqd_sub_group_size` is a width it offers. Sizes computed at run time are not seen."""
    found = []
    most = limits.max_threads_per_block
    for string in view.strings_containing("sycl"):
        for offset, size in _sycl_work_group_sizes(string.text, view.cpp_constants):
            if most is not None and size > most:
                found.append(Finding(f"a work-group of {size} work-items; the device allows {most}",
                                     string.line_of(offset)))
        for match in re.finditer(r"reqd_sub_group_size\s*\(([^()]+)\)", string.text):
            width = view.cpp_constants.evaluate(match.group(1))
            if width is not None and limits.sub_group_sizes and width not in limits.sub_group_sizes:
                found.append(Finding(f"reqd_sub_group_size({width}): the device offers sub-groups of "
                                     f"{', '.join(map(str, limits.sub_group_sizes))}", string.line_of(match.start())))
    return found


@validator("sycl_current_queue")
def sycl_current_queue(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """SYCL work from a torch extension goes to PyTorch's current XPU queue, so it orders with PyTorch's work
    (and with the harness's timing events)."""
    found = []
    for string in view.strings_containing("parallel_for"):
        if "torch" not in string.text and "at::" not in string.text and "c10" not in string.text:
            continue
        if "getCurrentXPUStream" not in string.text:
            found.append(Finding("the SYCL kernel is not submitted to PyTorch's queue: take it from "
                                 "c10::xpu::getCurrentXPUStream().queue()",
                                 string.line_of(string.text.index("parallel_for"))))
    return found


def _sycl_work_group_sizes(text: str, constants: cpp_scan.Constants) -> list[tuple[int, int]]:
    """(offset, work-items) of each literal work-group size: the local range of `nd_range<N>(global, local)`
    and `reqd_work_group_size(...)`."""
    found = []
    for match in re.finditer(r"nd_range\s*<\s*\d\s*>\s*\(", text):
        arguments = cpp_scan.split_top_level(_parenthesised(text, match.end() - 1))
        if len(arguments) >= 2:
            size = _range_size(arguments[1], constants)
            if size is not None:
                found.append((match.start(), size))
    for match in re.finditer(r"reqd_work_group_size\s*\(([^()]+)\)", text):
        size = _range_size(match.group(1), constants)
        if size is not None:
            found.append((match.start(), size))
    return found


def _range_size(argument: str, constants: cpp_scan.Constants) -> int | None:
    """Work-items in `sycl::range<N>(a, b)` or in a plain list of extents `a, b`."""
    inner = re.fullmatch(r"\s*(?:sycl::)?range\s*<\s*\d\s*>\s*[({](.*)[)}]\s*", argument, re.DOTALL)
    values = [constants.evaluate(part) for part in cpp_scan.split_top_level(inner.group(1) if inner else argument)]
    if not values or any(value is None for value in values):
        return None
    size = 1
    for value in values:
        size *= value or 1
    return size


def _parenthesised(text: str, start: int) -> str:
    """The text between the parenthesis at `start` and the one that closes it (to the end if none does)."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1:index]
    return text[start + 1:]


# --- Metal --------------------------------------------------------------------------------------------------


@validator("metal_threadgroup_memory")
def metal_threadgroup_memory(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """`threadgroup T name[N]` arrays of each Metal kernel fit the device's threadgroup memory.

    Memory set from the host with setThreadgroupMemoryLength and arrays sized by function constants are
    not seen.
    """
    limit = limits.max_threadgroup_memory
    if limit is None:
        return []
    found = []
    for string in view.strings_containing("threadgroup"):
        for name, total, offset in _static_arrays(string, "threadgroup", "kernel", view.metal_constants):
            if total > limit:
                found.append(Finding(f"Metal kernel {name} declares {_kib(total)} of threadgroup memory; the device "
                                     f"allows {_kib(limit)}", string.line_of(offset)))
    return found


@validator("metal_threads_per_threadgroup")
def metal_threads_per_threadgroup(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """`[[max_total_threads_per_threadgroup(N)]]` stays within the device's threads per threadgroup."""
    limit = limits.max_threads_per_block
    found = []
    for string in view.strings_containing("max_total_threads_per_threadgroup"):
        for match in re.finditer(r"max_total_threads_per_threadgroup\s*\(([^()]+)\)", string.text):
            value = view.metal_constants.evaluate(match.group(1))
            if value is not None and limit is not None and value > limit:
                found.append(Finding(f"max_total_threads_per_threadgroup({value}) exceeds the device's {limit} "
                                     f"threads per threadgroup", string.line_of(match.start())))
    return found


# --- Intel XPU (Triton) -------------------------------------------------------------------------------------


@validator("intel_warps")
def intel_warps(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """num_warps is a power of two within the limit, warp_size/threads_per_warp is a supported sub-group size,
    and num_warps times the sub-group size fits the work-group limit."""
    found = []
    sizes = limits.sub_group_sizes
    for setting, warps in _option_values(view, "num_warps"):
        found += _warps_findings(setting, warps, limits.max_num_warps)
        width = _setting_ints(view, setting, "warp_size") or _setting_ints(view, setting, "threads_per_warp")
        for lanes in sorted(width or ()):
            if sizes and lanes not in sizes:
                found.append(Finding(f"a sub-group size of {lanes} (line {setting.line}) is not supported; the "
                                     f"device offers {', '.join(map(str, sizes))}", setting.line))
        narrowest = min(width or sizes or (0,))
        for count in sorted(warps):
            if narrowest and limits.max_threads_per_block and count * narrowest > limits.max_threads_per_block:
                found.append(Finding(f"num_warps={count} with {narrowest}-wide sub-groups makes "
                                     f"{count * narrowest} work-items; a work-group holds at most "
                                     f"{limits.max_threads_per_block}", setting.line))
    return found


@validator("intel_grf_mode")
def intel_grf_mode(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """grf_mode (a launch keyword or a triton.Config entry) is a string the compiler accepts ("default", "auto",
    "128", "256" in current Intel Triton), and the large register file is not combined with more than 32 warps.

    The backend compares the option with strings, so `grf_mode=256` (an int) fails like an unknown mode, and the
    old names "small" and "large" are gone. A mode held in a variable is not seen.
    """
    triton = view.triton
    if triton is None:
        return []
    found = []
    for setting in triton.settings:
        node = setting.options.get("grf_mode")
        if node is None or not isinstance(node, ast.Constant):
            continue
        found += _grf_value_findings(node.value, setting.line, limits.grf_modes)
        warps = _setting_ints(view, setting, "num_warps") or frozenset()
        if str(node.value) in _LARGE_GRF_MODES and any(w > 32 for w in warps):
            found.append(Finding(f"grf_mode={node.value!r} halves the threads an Xe-core can hold: it cannot be "
                                 f"combined with num_warps={max(warps)} (at most 32)", setting.line))
    return found


def _grf_value_findings(value: object, line: int, accepted: tuple[str, ...]) -> list[Finding]:
    if not isinstance(value, str):
        return [Finding(f"grf_mode={value!r} at line {line} is not a string; Intel's Triton compares the option "
                        f"with strings, so write grf_mode={str(value)!r}", line)]
    if not accepted or value in accepted:
        return []
    renamed = _OLD_GRF_NAMES.get(value)
    hint = f" ({value!r} is the old name of {renamed!r})" if renamed else ""
    return [Finding(f"grf_mode={value!r} at line {line} is not accepted{hint}; use one of "
                    f"{', '.join(repr(m) for m in accepted)}", line)]


@validator("intel_slm")
def intel_slm(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """Estimated shared local memory of the tiles a `tl.dot` loop stages, against the device's SLM.

    Intel's Triton backend usually feeds the matrix engine from registers with 2D block loads and uses SLM
    for layout changes and reductions, so the estimate (as for `triton_shared_memory`) only warns.
    """
    return _dot_staging(view, limits.slm_size, "shared local memory")


# --- CPU C++ -------------------------------------------------------------------------------------------------


@validator("cpu_openmp_flags")
def cpu_openmp_flags(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """`#pragma omp` in the C++ needs -fopenmp in the build flags, or the pragmas are silently ignored."""
    pragmas = view.strings_containing("#pragma omp")
    if not pragmas:
        return []
    flagged = any(re.search(r"-f?openmp|-qopenmp|/openmp", s.text) for s in view.code_strings if len(s.text) < 40)
    if flagged:
        return []
    return [Finding("the C++ uses #pragma omp but no -fopenmp flag appears (extra_cflags and extra_ldflags): "
                    "the pragmas will be ignored and the loops run on one core", pragmas[0].line)]


@validator("cpu_parallel_loops")
def cpu_parallel_loops(view: CandidateSource, limits: DeviceLimits) -> list[Finding]:
    """C++ with loops but no OpenMP, at::parallel_for or threads runs on one core."""
    code = [s for s in view.native_strings if re.search(r"\bfor\s*\(", s.text) and "torch" in s.text]
    if not code:
        return []
    parallel = re.compile(r"#pragma\s+omp\s+(parallel|for|taskloop)|parallel_for|std::thread|std::async|tbb::")
    if any(parallel.search(s.text) for s in view.native_strings):
        return []
    return [Finding("the C++ loops run on a single core: no #pragma omp parallel, at::parallel_for or threads",
                    code[0].line)]


# --- shared helpers -----------------------------------------------------------------------------------------


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _option_values(view: CandidateSource, option: str) -> list[tuple[Settings, frozenset[int]]]:
    triton = view.triton
    if triton is None:
        return []
    pairs = []
    for setting in triton.settings:
        values = _setting_ints(view, setting, option)
        if values:
            pairs.append((setting, values))
    return pairs


def _setting_ints(view: CandidateSource, setting: Settings, option: str) -> frozenset[int] | None:
    node = setting.options.get(option)
    if node is None or view.triton is None:
        return None
    return view.triton.values(node, setting.env)


def _warps_findings(setting: Settings, warps: frozenset[int], most: int | None) -> list[Finding]:
    found = []
    for count in sorted(warps):
        if not is_power_of_two(count):
            found.append(Finding(f"num_warps={count} at line {setting.line} is not a power of two", setting.line))
        elif most is not None and count > most:
            found.append(Finding(f"num_warps={count} at line {setting.line} exceeds the device's {most}",
                                 setting.line))
    return found


def _static_arrays(string: CodeString, keyword: str, qualifier: str,
                   constants: cpp_scan.Constants) -> list[tuple[str, int, int]]:
    """(kernel name, bytes of its `keyword` arrays, offset of the first) per kernel in `string`.

    Declarations outside every kernel body are grouped under "(file scope)".
    """
    kernels = cpp_scan.functions(string.text, qualifier)
    totals: dict[str, list[int]] = {}
    for declaration in cpp_scan.array_declarations(string.text, keyword):
        size = cpp_scan.array_bytes(declaration, constants)
        if size is None:
            continue
        owner = next((k.name for k in kernels if k.start <= declaration.offset < k.end), "(file scope)")
        entry = totals.setdefault(owner, [0, declaration.offset])
        entry[0] += size
    return [(name, total, offset) for name, (total, offset) in totals.items()]


_ROLE = {
    "M": re.compile(r"^(BLOCK_(SIZE_)?M|BM|TILE_M|BLOCK_ROWS?)$"),
    "N": re.compile(r"^(BLOCK_(SIZE_)?N|BN|TILE_N|BLOCK_COLS?)$"),
    "K": re.compile(r"^(BLOCK_(SIZE_)?K|BK|TILE_K)$"),
}


def _dot_staging(view: CandidateSource, limit: int | None, what: str) -> list[Finding]:
    triton = view.triton
    if triton is None or limit is None:
        return []
    narrow = re.search(r"float16|bfloat16|fp16|bf16|float8|fp8", view.source) is not None
    element = 2 if narrow else 4
    found = []
    for kernel in triton.kernels.values():
        if not any(isinstance(n, ast.Call) and _call_name(n.func) == "dot" for n in ast.walk(kernel)):
            continue
        roles = {role: next((a.arg for a in kernel.args.args if pattern.match(a.arg)), None)
                 for role, pattern in _ROLE.items()}
        if None in roles.values():
            continue
        for setting in (s for s in triton.settings if s.kernel == kernel.name):
            env, _ = next(((e, o) for e, o in triton.bindings(kernel) if o == setting.line), ({}, None))
            sizes = [env.get(name or "") for name in (roles["M"], roles["N"], roles["K"])]
            if any(s is None or len(s) != 1 for s in sizes):
                continue
            m, n, k = (next(iter(s)) for s in sizes if s is not None)
            stages = _setting_ints(view, setting, "num_stages")
            depth = max(stages) if stages else 2
            estimate = (m * k + k * n) * element * max(depth, 1)
            if estimate > limit:
                found.append(Finding(
                    f"{kernel.name} with {roles['M']}={m}, {roles['N']}={n}, {roles['K']}={k}, num_stages={depth} "
                    f"stages about {_kib(estimate)} of operand tiles (at {element} bytes per element); the device "
                    f"has {_kib(limit)} of {what}: expect an out-of-resources failure or shrink the tiles",
                    setting.line))
    return found

