"""Poisoning what PyTorch's CUDA caching allocator will hand out next, so outputs a kernel never wrote show.

A kernel that skips part of its output returns whatever that memory held before, and on a GPU that is
often a correct answer: the caching allocator gives a freed block back to the next request of the same
size, so a buffer freed after one call (or after a reference run, in harnesses that run both in one
process) still holds the answer when `torch.empty` returns it again.

Before each correctness call the worker asks for every free block the allocator caches, on every stream,
fills each with 0xFF bytes (NaN in every floating-point type, -1 in every signed integer type) and frees
them again, so the candidate's next allocations land on poison. A reserve of fresh memory on the caller's
stream, poisoned the same way, covers allocations larger than what was cached. Memory the allocator has
to request anew from the driver for another stream is not covered: see docs/cuda.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

POISON_BYTE = 0xFF
# Requests up to 1 MiB are served from the allocator's small pool (2 MiB segments), larger ones from
# its large pool; a free block must be taken by a request from its own pool.
SMALL_REQUEST_LIMIT = 1 << 20
SMALL_RESERVE_BYTES = 16 << 20
_ROUNDS = 4

# Captured at import, before any candidate code runs in the worker.
_memory_snapshot = torch.cuda.memory_snapshot
_current_stream = torch.cuda.current_stream
_empty = torch.empty


def free_blocks(snapshot: list[dict[str, object]], device_index: int) -> list[tuple[int, str, int]]:
    """(stream, pool, size) of every free block the allocator caches on one device, largest first."""
    blocks = []
    for segment in snapshot:
        if segment.get("device", device_index) != device_index:
            continue
        if tuple(segment.get("segment_pool_id", (0, 0)) or (0, 0)) != (0, 0):  # type: ignore[arg-type]
            continue  # a private pool (CUDA graphs): ordinary requests cannot take its blocks
        stream = int(segment.get("stream", 0) or 0)  # type: ignore[call-overload]
        pool = str(segment.get("segment_type", "large"))
        for block in segment.get("blocks", []):  # type: ignore[attr-defined]
            if block.get("state") == "inactive" and int(block.get("size", 0)) > 0:
                blocks.append((stream, pool, int(block["size"])))
    return sorted(blocks, key=lambda item: -item[2])


def request_sizes(pool: str, size: int) -> list[int]:
    """The requests that take one free block: small-pool blocks can exceed what one small request may ask."""
    if pool != "small" or size <= SMALL_REQUEST_LIMIT:
        return [size]
    full, rest = divmod(size, SMALL_REQUEST_LIMIT)
    return [SMALL_REQUEST_LIMIT] * full + ([rest] if rest else [])


def poison_free_memory(device: torch.device, reserve_bytes: int) -> int:
    """Poison a reserve on the current stream and every cached free block; returns the bytes written."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    current = _current_stream(index)
    mine = (0, current.cuda_stream)
    held: list[torch.Tensor] = []
    # The reserve first: a fresh segment is rounded up by the allocator, and the rounds below then take the
    # remainder too.
    cached = {"small": 0, "large": 0}
    for stream, pool, size in free_blocks(_memory_snapshot(), index):
        if stream in mine:
            cached[pool] += size
    if cached["large"] < reserve_bytes:
        held.append(_poisoned(max(reserve_bytes - cached["large"], SMALL_REQUEST_LIMIT + 512), device))
    for _ in range(max(0, SMALL_RESERVE_BYTES - cached["small"]) // SMALL_REQUEST_LIMIT):
        held.append(_poisoned(SMALL_REQUEST_LIMIT, device))
    # Taking the largest blocks first lets best-fit hand each request the block it was sized for; a few
    # rounds pick up what splitting left over.
    for _ in range(_ROUNDS):
        blocks = free_blocks(_memory_snapshot(), index)
        if not blocks:
            break
        for stream, pool, size in blocks:
            try:
                with _on_stream(stream, current, index):
                    held.extend(_poisoned(request, device) for request in request_sizes(pool, size))
            except RuntimeError:
                if stream in mine:
                    raise
                # A stream the candidate has destroyed: nothing can allocate from it any more.
    written = sum(tensor.numel() for tensor in held)
    del held  # back to the cache, poisoned, in stream order after the fills
    return written


def _poisoned(size: int, device: torch.device) -> torch.Tensor:
    tensor = _empty(size, dtype=torch.uint8, device=device)
    tensor.fill_(POISON_BYTE)
    return tensor


@contextmanager
def _on_stream(stream: int, current: torch.cuda.Stream, index: int) -> Iterator[None]:
    """Make `stream` (a raw cudaStream_t from the snapshot) current, so a request draws from its pool."""
    if stream in (0, current.cuda_stream):
        yield
        return
    with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=index)):
        yield
