"""The engine's cost model (engine/cost.py): the order a search tries variants in, and each variant's floor."""

from __future__ import annotations

from kforge.engine.cost import CostModel, Floor, search_order, share_of_floor
from kforge.profiling.schema import Peaks, Workload

PEAKS = Peaks(device="a GPU", torch_version="2", dtype="float32", flops_per_s=50e12, bytes_per_s=3e12,
              matmul_n=8192, copy_bytes=1 << 28)


def _gemm(dtype: str) -> Workload:  # 1024 x 8192 x 8192: far above the ridge
    size = 2 if dtype != "float32" else 4
    return Workload(flops=2 * 1024 * 8192 * 8192, flops_method="flop_counter",
                    min_bytes=size * (2 * 1024 * 8192 + 8192 * 8192), dtype=dtype)


def test_a_float32_gemm_on_fma_is_bound_by_the_fp32_peak_and_on_tensor_cores_by_nothing_known() -> None:
    floor = Floor.of(_gemm("float32"), PEAKS)
    assert floor.compute_ms > floor.memory_ms
    assert floor.for_variant({"precision": "ieee"}) == floor.compute_ms
    # tf32x3 can beat the fp32 FMA peak the floor was measured with: a compute-bound call's floor is unknown...
    assert floor.for_variant({"precision": "tf32x3"}) is None
    # ... and a memory-bound call's is the bandwidth's.
    thin = Floor.of(Workload(flops=1e6, flops_method="flop_counter", min_bytes=1 << 30, dtype="float32"), PEAKS)
    assert thin.for_variant({"precision": "tf32x3"}) == thin.memory_ms
    assert floor.for_variant({}) == floor.compute_ms


def test_a_half_precision_floor_uses_its_own_peak_whatever_the_variant_says() -> None:
    floor = Floor.of(_gemm("bfloat16"), PEAKS.model_copy(update={"dtype": "bfloat16", "flops_per_s": 700e12}))
    assert floor.for_variant({"precision": "default"}) == max(floor.memory_ms, floor.compute_ms)


def test_tensor_core_variants_go_first_only_where_the_device_has_tensor_cores() -> None:
    configs = [{"precision": "ieee", "BLOCK_M": 64}, {"precision": "tf32x3", "BLOCK_M": 64},
               {"precision": "ieee", "BLOCK_M": 128}, {"precision": "tf32x3", "BLOCK_M": 128}]
    assert search_order(configs, tensor_cores=True) == [1, 3, 0, 2]
    assert search_order(configs, tensor_cores=False) == [0, 1, 2, 3]
    assert CostModel(None, tensor_cores=True).floor_ms({"precision": "ieee"}) is None


def test_share_of_floor() -> None:
    assert share_of_floor(1.0, 2.0) == 0.5
    assert share_of_floor(1.0, 0.0) == 0.0
