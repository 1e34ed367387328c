"""Holding the whole GPU busy while the host issues a timed call, so the events see only the device's work.

With the stream idle, the start event fires as soon as it is recorded, and the events then count the
host's time to issue the call (Python, argument checks, the launch itself) as well as the device's time
to run it. On an H200 that host time is 20-150 us a call and its level differs from one worker process to
the next by a third, which swamped every small kernel's figure and moved a 2.6 ms kernel's median by 1%
between evaluations (docs/cuda.md).

So before the start event the timed stream runs a *hold*: a kernel with two blocks of 1024 threads per
multiprocessor that spin on the global timer for a set time. Two such blocks fill every thread slot of
every multiprocessor (2048 on Hopper and Ampere), so no kernel from any stream can start while the hold
runs: work a candidate pushes onto a side stream waits like the rest, starts after the start event, and is
either inside the timed window or caught by the host-clock audit after it. The platform sizes each hold
from how long the host took to issue the previous calls, so the device is still busy when the host has
finished issuing.

The hold needs Triton (it ships with PyTorch's CUDA builds); without it the platform times as before.
"""

from __future__ import annotations

from typing import Any

import torch

THREADS_PER_BLOCK = 1024
BLOCKS_PER_MULTIPROCESSOR = 2

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - Triton ships with torch's CUDA wheels
    triton = None


if triton is not None:
    @triton.jit(do_not_specialize=["duration_ns"])
    def _hold_kernel(duration_ns):
        # %globaltimer: nanoseconds, the same clock in every block.
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                          pack=1)
        now = start
        while now - start < duration_ns:
            now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                            is_pure=False, pack=1)


_grids: dict[int, tuple[int]] = {}


def hold_device(index: int, duration_ns: int) -> None:
    """Queue a hold of `duration_ns` on the current stream of device `index`."""
    grid = _grids.get(index)
    if grid is None:
        multiprocessors = torch.cuda.get_device_properties(index).multi_processor_count
        grid = _grids[index] = (BLOCKS_PER_MULTIPROCESSOR * multiprocessors,)
    kernel: Any = _hold_kernel
    with torch.cuda.device(index):
        kernel[grid](int(duration_ns), num_warps=THREADS_PER_BLOCK // 32)


def hold_available() -> bool:
    return triton is not None
