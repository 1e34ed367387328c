"""What the CUDA platform reads off a device and concludes from it: pure functions, testable without a GPU.

Everything that needs judgement lives here (which architecture to build for, how large a cache flush must
be, whether an error left the CUDA context unusable, whether timings show work that escaped the timer), so
that CI checks it on machines with no GPU; the platform (`__init__.py`) only gathers the numbers and calls these.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

# Used when a device does not report its L2 size (older PyTorch): larger than any current NVIDIA L2
# (H100 50 MB, H200 60 MB), since flushing more than needed costs only a little time.
DEFAULT_L2_BYTES = 128 * 1024 * 1024
# Small caches still get a flush buffer large enough to evict what a kernel's launch path touched.
MIN_FLUSH_BYTES = 64 * 1024 * 1024

# Timed calls: how much device time may pass after the timed stream's end event before the harness
# concludes that work was pushed elsewhere. Host clock and device events disagree by a few microseconds
# of launch and synchronization latency even for honest calls; the calibration removes most of that and
# the floor absorbs the rest. Both were chosen to be generous; docs/cuda.md says how to check them.
HIDDEN_WORK_FLOOR_NS = 15_000
HIDDEN_WORK_FRACTION = 0.25

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
    value = getattr(properties, "L2_cache_size", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return DEFAULT_L2_BYTES


def flush_bytes(l2_bytes: int) -> int:
    """Size of the buffer written between timed calls: twice the L2, so none of the inputs stays resident."""
    return max(2 * l2_bytes, MIN_FLUSH_BYTES)


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
    for line in text.splitlines():
        lowered = line.lower()
        if any(marker in lowered for marker in STICKY_ERRORS):
            return line.strip()[:300]
    return None


def is_context_error(text: str) -> bool:
    """True when an error message names a CUDA error that leaves the context unusable."""
    return context_error_line(text) is not None


def hidden_work(device_ns: Sequence[int], host_ns: Sequence[int], overhead_ns: float,
                timed_ns: Sequence[int] | None = None) -> str | None:
    """Why the timings show work that ran outside the timed stream, or None.

    `device_ns[i]` is the span the events on the caller's stream measured for call i, from just before
    the call's hold to its end; `host_ns[i]` is the host clock from just before that first event until
    the whole device was idle again; `overhead_ns` is the usual difference between the two for an empty
    call. An honest call's host time exceeds its event span by about that overhead. Work launched on
    another stream and not awaited by the caller's stream keeps the device busy after the end event: the
    host sees it, the events do not. The allowance is a share of what the calls were timed at
    (`timed_ns`, by default the spans themselves).
    """
    if not device_ns or len(device_ns) != len(host_ns):
        return None
    surplus = statistics.median(host - device for device, host in zip(device_ns, host_ns, strict=True)) - overhead_ns
    device = statistics.median(timed_ns if timed_ns else device_ns)
    allowed = max(HIDDEN_WORK_FLOOR_NS, HIDDEN_WORK_FRACTION * device)
    if surplus <= allowed:
        return None
    return (f"the device stayed busy {surplus / 1e3:.1f} us per call after the timed stream had finished "
            f"(its events measured {device / 1e3:.1f} us per call; {allowed / 1e3:.1f} us is allowed): work "
            "ran on another stream that the caller's stream never waited for, out of the timer's sight")
