"""The generated GEMM: `linear`, `matmul` by a 2-D right operand, `bmm` (or 3-D `matmul`).

A tiled `tl.dot` (`_gemm.j2`: masked edges, grouped tile order, batch on the second grid axis; a product by a
parameter gets the fixed form, its sizes constants of the kernel). A pointwise epilogue is applied to the
accumulator before the one store (`gemm.py.j2`); an epilogue with a reduction runs in one fused kernel after
the bare product (`gemm_function.j2`, then `fused`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from typing import Any

from kforge.engine.ir import POINTWISE_OPS, Node, Program
from kforge.engine.triton.emit import var
from kforge.engine.triton.fast import param_root
from kforge.engine.triton.fused import FusedLowering
from kforge.engine.triton.lowering import Config, Leaf, Split, broadcast_mode, config_text, dtype_arg, kernel_argument

# ---- tunables ------------------------------------------------------------------------------------------------
# GEMM tiles (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages), in order of preference among those that give the
# problem's product enough programs to fill a GPU (`_FILL`, most of one wave on a GPU of 100-140 multiprocessors);
# where none does (a small product), the tiles giving more programs come first (see `_gemm_tiles`).
_GEMM_TILES = [(64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3),
               (32, 64, 32, 4, 4), (64, 32, 64, 4, 4), (128, 128, 64, 8, 2), (32, 32, 64, 4, 3), (32, 32, 32, 2, 2),
               (16, 64, 64, 4, 3), (16, 32, 64, 2, 4),
               # Large tiles for large products on tensor cores (a search tries them: one too large for the
               # device's registers or shared memory fails to launch and is dropped there).
               (128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (128, 128, 32, 4, 4)]
_FILL = 96
# float32 products: full precision on the FMA units, or three TF32 tensor-core products (about float32 accuracy).
_GEMM_PRECISIONS = ("ieee", "tf32x3")


class GemmLowering(FusedLowering):
    """The generated GEMM, with its epilogue on the accumulator or in a fused kernel after it."""

    def rides_on_tiles(self, split: Split, heavy: Node) -> bool:
        """Whether the epilogue can be applied to the heavy op's accumulator before its one store: pointwise, and
        keeping the heavy output's shape (an operand broadcasting it to more elements would leave the store too
        small)."""
        return self.program.shape(self.resolve(split, self.output.name)) == heavy.shape \
            and all(node.op in POINTWISE_OPS for node in split.compute if node is not heavy)

    def gemm_configs(self) -> Iterator[tuple[Config, str | None]]:
        return self.tile_configs(_gemm_tiles(self.program.heavy), {"GROUP_M": 8})

    def tile_configs(self, tiles: Iterable[tuple[int, int, int, int, int]], extra: Config
                     ) -> Iterator[tuple[Config, str | None]]:
        """The configurations of a `tl.dot` kernel (GEMM or convolution) over `tiles`, with each float32 precision."""
        heavy = self.program.heavy
        float32 = heavy is not None and heavy.dtype == "float32"
        precisions: Iterable[str | None] = _GEMM_PRECISIONS if float32 else (None,)
        # Each tile in both precisions before the next tile, so that a short list still holds both.
        for (bm, bn, bk, warps, stages), precision in itertools.product(tiles, precisions):
            yield ({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, **extra, "num_warps": warps,
                    "num_stages": stages, "precision": precision or "default"}, precision)

    def gemm_offers(self, split: Split) -> Iterator[tuple[Config, Any]]:
        for config, precision in self.gemm_configs():
            yield config, lambda config=config, precision=precision: self.render_gemm(split, config, precision)

    def gemm_then_fused_offers(self, heavy: Node) -> Iterator[tuple[Config, Any]]:
        """The generated GEMM alone, then one fused kernel for an epilogue it cannot hold (a reduction)."""
        bias = ", {2}" if len(heavy.value_args) > 2 else ""
        for config, precision in itertools.islice(self.gemm_configs(), 8):
            split = self.split(heavy_python=f"_gemm({{0}}, {{1}}{bias})")
            fixed = self.gemm_fixed(heavy, config, [])
            split.heavy_kernel += self.env.get_template("gemm_function.j2").render(
                kernel="_gemm_kernel", leaves=[], body=[], scalars=[], heavy=var(heavy.name), result=var(heavy.name),
                has_bias=bool(bias), op=heavy.op, batched=bool(batched(self.program, heavy)), a_python="a_in",
                b_python="b_in", bias_python="bias", out_dtype=f"torch.{heavy.dtype}", config=config,
                dtype_arg=dtype_arg(self.program.spec(str(heavy.value_args[0])).dtype, heavy.dtype),
                precision=precision, config_text=config_text(config), fixed=fixed, finish="")
            yield from itertools.islice(self.fused_offers(split, config), 2)

    def render_gemm(self, split: Split, config: Config, precision: str | None) -> str:
        heavy = self.program.heavy
        assert heavy is not None
        epilogue = [node for node in split.compute if node is not heavy]
        leaves = self.epilogue_leaves(split, epilogue, heavy, len(heavy.shape) - 1)
        fixed = self.gemm_fixed(heavy, config, leaves)
        loads = [gemm_load(leaf, masked=not (fixed and fixed["even_n"])) for leaf in leaves]
        args = [split.python[str(a)] for a in heavy.value_args]
        return self.env.get_template("gemm.py.j2").render(
            **self.common(split, config, f"A generated GEMM ({heavy.op}) with its epilogue applied to the "
                                         "accumulator before the one store."),
            leaves=leaves, body=loads + self.body(split, epilogue), scalars=self.scalars_of(split, epilogue),
            op=heavy.op, batched=bool(batched(self.program, heavy)), a_python=args[0], b_python=args[1],
            has_bias=len(args) > 2,
            bias_python=args[2] if len(args) > 2 else "", heavy=var(heavy.name),
            precision=precision, fixed=fixed,
            dtype_arg=dtype_arg(self.program.spec(str(heavy.value_args[0])).dtype, self.output.dtype))

    def epilogue_leaves(self, split: Split, epilogue: list[Node], heavy: Node, dim: int) -> list[Leaf]:
        """The operands of an epilogue on a `tl.dot` accumulator, each with how it is read (see `gemm_load`): a
        parameter varying along the heavy output's `dim` only (the tile's N: a GEMM's last dim, a convolution's
        channels) is a vector indexed by `rn`; a one-element parameter a scalar; anything else is read in full."""
        leaves = self.leaves_of(split, epilogue)
        for leaf in leaves:
            leaf.mode = broadcast_mode(leaf, self.program.shape(leaf.name), heavy.shape, dim)
            if leaf.mode == "row":
                leaf.mode = "col"
        return leaves

    def gemm_fixed(self, heavy: Node, config: Config, leaves: list[Leaf]) -> dict[str, Any] | None:
        """The fixed form of the generated GEMM (see `_gemm.j2`) when the right operand is a parameter and the
        epilogue reads parameters only; its constants and masks for `config`; else None."""
        weight = str(heavy.value_args[1])
        shape = self.program.shape(weight)
        if (heavy.op not in ("linear", "matmul") or len(shape) != 2 or param_root(self.program, weight) != weight
                or batched(self.program, heavy) or any(leaf.mode == "full" for leaf in leaves)
                or 0 in shape or math.prod(shape) >= 2 ** 31):
            return None
        n, k = shape if heavy.op == "linear" else shape[::-1]
        even_n, even_k = n % config["BLOCK_N"] == 0, k % config["BLOCK_K"] == 0
        return {"N": n, "K": k, "even_n": even_n, "tiles_n": -(-n // config["BLOCK_N"]),
                "a_mask": "(rm[:, None] < M)" + ("" if even_k else " & (rk[None, :] < K - k)"),
                "b_mask": " & ".join(([] if even_k else ["(rk[:, None] < K - k)"])
                                     + ([] if even_n else ["(rn[None, :] < N)"])),
                "out_mask": "(rm[:, None] < M)" + ("" if even_n else " & (rn[None, :] < N)")}


def batched(program: Program, heavy: Node) -> bool | None:
    """For a product the generated GEMM computes: whether it is batched (3-D by 3-D); None for any other op.

    Covered: `matmul` of any left operand by a 2-D right one (the left's leading dims are rows), and `bmm` or
    `matmul` of two 3-D operands with the same batch.
    """
    if heavy.op not in ("matmul", "bmm") or len(heavy.value_args) != 2:
        return None
    left, right = (program.shape(str(arg)) for arg in heavy.value_args)
    if len(right) == 2 and len(left) >= 1 and heavy.op == "matmul":
        return False
    if len(left) == 3 and len(right) == 3 and left[0] == right[0]:
        return True
    return None


def _gemm_tiles(heavy: Node | None) -> list[tuple[int, int, int, int, int]]:
    """`_GEMM_TILES` ordered for the product `heavy` computes (its main input set's sizes): the tiles that give
    at least `_FILL` programs in their own order, then the others, most programs first."""
    if heavy is None or len(heavy.shape) < 1:
        return list(_GEMM_TILES)
    # the batch's programs run on the grid's second axis, alongside
    return by_fill(_GEMM_TILES, math.prod(heavy.shape[:-1]), heavy.shape[-1])


def by_fill(tiles: list[tuple[int, int, int, int, int]], rows: int, cols: int, copies: int = 1
             ) -> list[tuple[int, int, int, int, int]]:
    """`tiles` (BLOCK_M, BLOCK_N, ...) for an output of `rows` x `cols` (`copies` times over): the tiles that give
    at least `_FILL` programs in their own order, then the others, most programs first."""
    programs = {tile: copies * -(-rows // tile[0]) * -(-cols // tile[1]) for tile in tiles}
    return sorted(tiles, key=lambda tile: (0, 0) if programs[tile] >= _FILL else (1, -programs[tile]))


def gemm_load(leaf: Leaf, masked: bool = True, along_n: str = "[None, :]") -> str:
    """The epilogue's load of `leaf`; `masked=False` where the tiles divide N (a vector along N needs no mask);
    `along_n` places a vector along N in the tile (its columns in the GEMM's, its rows in the convolution's)."""
    if leaf.mode == "scalar":
        leaf.prepare = kernel_argument(leaf, "out_shape")
        return f"{leaf.var} = tl.load({leaf.arg}).to({leaf.held})"
    if leaf.mode == "col":
        leaf.prepare = kernel_argument(leaf, "out_shape")
        mask = ", mask=rn < N, other=0.0" if masked else ""
        return f"{leaf.var} = tl.load({leaf.arg} + rn{mask}).to({leaf.held}){along_n}"
    leaf.prepare = kernel_argument(leaf, "out_shape")
    return f"{leaf.var} = tl.load({leaf.arg} + offs, mask=mask, other=0.0).to({leaf.held})"
