"""What the CUDA platform reads off a device and concludes from it: pure functions, testable without a GPU.

Everything that needs judgement lives here (which architecture to build for, the L2 to flush, whether an
error left the CUDA context unusable), so that CI checks it on machines with no GPU; the platform
(`__init__.py`) only gathers the numbers and calls these. What every GPU platform judges alike (flush size,
hidden work) is in `platforms/gpu.py`, and named here too for the CUDA platform's callers.
"""

from __future__ import annotations

from kforge.platforms.gpu import (
    HIDDEN_WORK_FLOOR_NS,
    HIDDEN_WORK_FRACTION,
    MIN_FLUSH_BYTES,
    flush_bytes,
    hidden_work,
    marked_line,
    reported_size,
)

# Used when a device does not report its L2 size (older PyTorch): larger than any current NVIDIA L2
# (H100 50 MB, H200 60 MB), since flushing more than needed costs only a little time.
DEFAULT_L2_BYTES = 128 * 1024 * 1024

# Errors after which a CUDA context is unusable for the rest of the process ("sticky" errors): every later
# call fails with the same error, so the worker must be replaced. Matched in lower case against the
# exception's text; PyTorch and Triton both quote the driver's own wording.
STICKY_ERRORS = (
    "an illegal memory access was encountered",
    "device-side assert triggered",
    "unspecified launch failure",
    "misaligned address",
    "an illegal instruction was encountered",
    "invalid program counter",
    "hardware stack error",
    "operation not supported on global/shared address space",
    "the launch timed out and was terminated",
    "uncorrectable ecc error encountered",
    "cudaerrorillegaladdress",
    "cudaerrorassert",
    "cudaerrorlaunchfailure",
)


def l2_cache_bytes(properties: object) -> int:
    """The L2 size a device reports (`torch.cuda.get_device_properties(...).L2_cache_size`), else a default."""
    return reported_size(properties, "L2_cache_size", DEFAULT_L2_BYTES)


def arch_list(capability: tuple[int, int]) -> str:
    """TORCH_CUDA_ARCH_LIST for exactly this device: (9, 0) -> '9.0', so load_inline emits sm_90 code."""
    major, minor = capability
    return f"{major}.{minor}"


def arch_flag(capability: tuple[int, int]) -> str:
    """The nvcc target name of a device: (9, 0) -> 'sm_90'."""
    major, minor = capability
    return f"sm_{major}{minor}"


def context_error_line(text: str) -> str | None:
    """The line of an error message that names a CUDA error leaving the context unusable, or None."""
    return marked_line(text, STICKY_ERRORS)


def is_context_error(text: str) -> bool:
    """True when an error message names a CUDA error that leaves the context unusable."""
    return context_error_line(text) is not None


__all__ = ["DEFAULT_L2_BYTES", "HIDDEN_WORK_FLOOR_NS", "HIDDEN_WORK_FRACTION", "MIN_FLUSH_BYTES", "STICKY_ERRORS",
           "arch_flag", "arch_list", "context_error_line", "flush_bytes", "hidden_work", "is_context_error",
           "l2_cache_bytes"]
