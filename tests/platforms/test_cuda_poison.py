"""Reading the CUDA caching allocator's snapshot for poisoning: which free blocks exist, and how to take them."""

from __future__ import annotations

from kforge.platforms.cuda.poison import SMALL_REQUEST_LIMIT, free_blocks, request_sizes

MIB = 1 << 20


def segment(device: int, stream: int, pool: str, blocks: list[tuple[str, int]]) -> dict[str, object]:
    return {"device": device, "stream": stream, "segment_type": pool,
            "blocks": [{"state": state, "size": size} for state, size in blocks]}


def test_free_blocks_lists_inactive_blocks_of_one_device_largest_first() -> None:
    snapshot = [
        segment(0, 0, "large", [("active_allocated", 8 * MIB), ("inactive", 12 * MIB)]),
        segment(0, 77, "small", [("inactive", 512), ("active_allocated", 1024), ("inactive", MIB)]),
        segment(1, 0, "large", [("inactive", 40 * MIB)]),  # another device
        segment(0, 0, "large", [("active_pending_free", 4 * MIB)]),
        {**segment(0, 0, "large", [("inactive", 64 * MIB)]), "segment_pool_id": (1, 0)},  # a CUDA graph's pool
    ]
    assert free_blocks(snapshot, 0) == [(0, "large", 12 * MIB), (77, "small", MIB), (77, "small", 512)]


def test_a_free_small_segment_is_taken_by_small_requests() -> None:
    # A whole free 2 MiB small-pool segment: one 2 MiB request would go to the large pool instead.
    assert request_sizes("small", 2 * MIB) == [SMALL_REQUEST_LIMIT, SMALL_REQUEST_LIMIT]
    assert request_sizes("small", MIB + 512) == [SMALL_REQUEST_LIMIT, 512]
    assert request_sizes("small", 4096) == [4096]
    assert request_sizes("large", 30 * MIB) == [30 * MIB]
