"""The generated convolutions: a direct depthwise `conv1d`, and any other `conv1d` or `conv2d` as an implicit GEMM.

A depthwise `conv1d` (one filter per channel) is a direct convolution (`conv1d_depthwise.py.j2`), with a causal
slice and pointwise work in its store or followed by the epilogue's fused kernel. Any other `conv1d` or
`conv2d` by a parameter (zero padding, any stride, dilation and groups) is an implicit GEMM (`_conv.j2`: output
pixels x output channels, K = input channels per group x taps, the input gathered through computed indices
with masks for the padding, tiles held as channels x pixels so memory is read and written along the pixels; the
weight's sizes and the options constants of the kernel), built on the GEMM's tiles and epilogue loads. A
pointwise epilogue keeping the convolution's shape is applied to the accumulator before the one store
(`conv.py.j2`); any other runs in one fused kernel after the bare convolution (`conv_function.j2`). conv3d and
the transposed convolutions go through the same offers with their own kernel and constants (`conv_nd`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from kforge.engine.ir import POINTWISE_OPS, Node, Program
from kforge.engine.triton.emit import Unsupported, var
from kforge.engine.triton.fast import param_root, prelude_split
from kforge.engine.triton.gemm import GemmLowering, by_fill, gemm_load
from kforge.engine.triton.lowering import Config, Split, config_text, dtype_arg, param_local

# ---- tunables ------------------------------------------------------------------------------------------------
_DEPTHWISE = [{"BLOCK_T": block, "conv_warps": warps} for block, warps in [(512, 4), (1024, 4), (256, 2), (2048, 8)]]
# Convolution tiles (BLOCK_M over output pixels, BLOCK_N over output channels, BLOCK_K, warps, stages), ordered
# like the GEMM's. Convolutions often have few output channels (32: the bundled example's 8192 x 32 output), so
# narrow tiles come first; 64 x 32 gives that output 128 programs.
_CONV_TILES = [(64, 32, 32, 4, 2), (32, 32, 32, 2, 2), (64, 64, 32, 4, 3), (128, 32, 32, 4, 2), (128, 64, 32, 4, 3),
               (32, 16, 32, 2, 2), (128, 128, 32, 8, 3), (128, 64, 32, 4, 4)]


class ConvLowering(GemmLowering):
    """The generated convolutions: a direct depthwise conv1d, and the implicit GEMM on the GEMM's tiles."""

    def depthwise_offers(self, heavy: Node) -> Iterator[tuple[Config, Any]]:
        """A generated depthwise convolution: with the epilogue in its store when the epilogue is a causal slice
        and pointwise work on the result alone, else followed by the epilogue's own fused kernel."""
        # The weight's sizes and the options are fixed: constants of the kernel, not arguments.
        channels, _, taps = self.program.shape(str(heavy.value_args[1]))
        fixed = {key: _first(heavy.attr(key), default)
                 for key, default in (("stride", 1), ("padding", 0), ("dilation", 1))}
        fixed.update(channels=channels, taps=taps, has_bias=len(heavy.value_args) > 2)
        x_dtype = self.program.spec(str(heavy.value_args[0])).dtype
        operands = "{0}, {1}, {2}" if fixed["has_bias"] else "{0}, {1}"
        template = self.env.get_template("conv1d_depthwise.py.j2")
        fused = self.depthwise_epilogue(heavy)
        for conv in _DEPTHWISE:
            if fused is not None:
                split, keep = fused
                scalars = self.scalars_of(split, split.compute)
                call = f"_depthwise_conv1d({operands}, {keep}" + "".join(f", {scalar}" for scalar in scalars) + ")"
                yield conv, lambda conv=conv, split=split, call=call, scalars=scalars: self.render_python_only(
                    split, template.render(config=conv, body=self.body(split, split.compute), heavy=var(heavy.name),
                                           result=var(self.resolve(split, self.output.name)), scalars=scalars,
                                           out_dtype=f"torch.{self.output.dtype}",
                                           dtype_arg=dtype_arg(x_dtype, self.output.dtype), **fixed),
                    call.format(*(split.python[str(arg)] for arg in heavy.value_args)))
                continue
            split = self.split(heavy_python=f"_depthwise_conv1d({operands}, None)")
            split.heavy_kernel += template.render(config=conv, body=[], heavy="acc", result="acc", scalars=[],
                                                  out_dtype=f"torch.{heavy.dtype}",
                                                  dtype_arg=dtype_arg(x_dtype, heavy.dtype), **fixed)
            epilogue = list(self.fused_offers(split, conv))
            yield from epilogue[:2]  # the convolution's tiles matter more than the epilogue's here

    def depthwise_epilogue(self, heavy: Node) -> tuple[Split, str] | None:
        """The split of an epilogue the convolution's store can hold, and the Python length it keeps: at most
        one slice keeping a prefix of the last dim, then pointwise work on the result with constants and
        run-time scalars only. None for any other epilogue."""
        if self.program.prepared:
            return None
        split = self.split_leaves()
        keep = "None"
        mine = {heavy.name}
        for node in self.program.nodes:
            args = node.value_args
            if node.op == "size" or (node.shape == () and all(a in split.python or a in split.scalars for a in args)
                                     and node.op in POINTWISE_OPS):
                self.place(split, node)
            elif (node.op == "slice" and args[0] in mine and keep == "None" and not node.attr("start")
                  and node.attr("step", 1) == 1 and node.attr("dim") == len(heavy.shape) - 1):
                stop = f"int({split.scalars[args[1]]})" if len(args) > 1 else node.attr("stop")
                keep = "None" if stop is None else str(stop)
                split.alias[node.name] = heavy.name
                mine.add(node.name)
            elif node.op in POINTWISE_OPS and all(a in mine or a in split.scalars for a in args):
                split.compute.append(node)
                mine.add(node.name)
            else:
                return None
        return split, keep

    def conv_offers(self, heavy: Node) -> Iterator[tuple[Config, Any]]:
        """The generated convolution: with the epilogue on its accumulator when the epilogue is pointwise and keeps
        the convolution's shape, else alone (`conv_function.j2`), followed by the epilogue's own fused kernel."""
        configs = self.tile_configs(_conv_tiles(self.program, heavy), {})
        try:
            split: Split | None = self.split(heavy_python=None)
        except Unsupported:  # a reshape of the convolution's output: done in Python, after the bare convolution
            split = None
        if split is not None and self.rides_on_tiles(split, heavy):
            for config, precision in configs:
                yield config, lambda config=config, precision=precision, split=split: self.render_conv(
                    split, config, precision)
            return
        bias = ", {2}" if len(heavy.value_args) > 2 else ""
        x_dtype = self.program.spec(str(heavy.value_args[0])).dtype
        for config, precision in itertools.islice(configs, 8):
            alone = self.split(heavy_python=f"_conv({{0}}, {{1}}{bias})")
            alone.heavy_kernel += self.env.get_template("conv_function.j2").render(
                kernel="_conv_kernel", leaves=[], body=[], scalars=[], heavy=var(heavy.name), result=var(heavy.name),
                has_bias=bool(bias), op=heavy.op, x_python="x_in", w_python="weight", bias_python="bias",
                config=config, config_text=config_text(config), precision=precision, finish="",
                conv=self.conv_fixed(heavy, config), dtype_arg=dtype_arg(x_dtype, heavy.dtype))
            # The fused kernel's warps are its own: the convolution's are named apart in the variant's configuration.
            tag = {("conv_" + key if key in ("num_warps", "num_stages") else key): value
                   for key, value in config.items()}
            yield from itertools.islice(self.fused_offers(alone, tag), 2)

    def render_conv(self, split: Split, config: Config, precision: str | None) -> str:
        heavy = self.program.heavy
        assert heavy is not None
        epilogue = [node for node in split.compute if node is not heavy]
        leaves = self.epilogue_leaves(split, epilogue, heavy, 1)
        conv = self.conv_fixed(heavy, config)
        loads = [gemm_load(leaf, masked=not conv["even_n"], along_n="[:, None]") for leaf in leaves]
        x, weight, *bias = heavy.value_args
        bias_python = param_local(str(param_root(self.program, str(bias[0])))) if bias else ""
        scalars = self.scalars_of(split, epilogue)
        common = self.common(split, config, f"A generated convolution ({heavy.op}, an implicit GEMM) with its "
                                            "epilogue applied to the accumulator before the one store.")
        # Only what the launch reads: a parameter's reshape, read in the kernel by its own index, is dropped.
        common["prelude"], _ = prelude_split(split.prelude, [split.python[str(x)], *scalars,
                                                             *(leaf.prepare for leaf in leaves)])
        return self.env.get_template("conv.py.j2").render(
            **common, leaves=leaves, body=loads + self.body(split, epilogue), scalars=scalars, heavy=var(heavy.name),
            has_bias=bool(bias), x_python=split.python[str(x)], w_python=param_local(str(weight)),
            bias_python=bias_python, precision=precision, conv=conv,
            dtype_arg=dtype_arg(self.program.spec(str(x)).dtype, self.output.dtype))

    def conv_fixed(self, heavy: Node, config: Config) -> dict[str, Any]:
        """The constants of the generated convolution for `config`, and `template`, the kernel's template."""
        return {**_conv_fixed(self.program, heavy, config), "template": "_conv.j2"}


def is_depthwise(program: Program, heavy: Node) -> bool:
    """A conv1d with one filter per channel (groups == in channels == out channels) by a parameter (its sizes
    are constants of the generated kernel), and no string padding."""
    if heavy.op != "conv1d" or len(heavy.value_args) < 2 or param_root(program, heavy.value_args[1]) is None:
        return False
    x, weight = (program.shape(str(arg)) for arg in heavy.value_args[:2])
    groups = heavy.attr("groups", 1)
    padding = heavy.attr("padding", 0)
    return (len(x) == 3 and len(weight) == 3 and weight[1] == 1 and groups == x[1] == weight[0]
            and not isinstance(padding, str))


def conv_refusal(program: Program, heavy: Node) -> str | None:
    """Why the generated convolution cannot compute `heavy` (one phrase), or None when it can: its weight must be
    a parameter (its sizes are constants of the kernel) and its input batched."""
    x, weight, *bias = (str(arg) for arg in heavy.value_args)
    spatial = len(program.shape(weight)) - 2
    if param_root(program, weight) != weight or (bias and param_root(program, bias[0]) is None):
        return "its weight or bias is not a parameter"
    if len(program.shape(x)) != spatial + 2:
        return "an unbatched input"
    if isinstance(heavy.attr("padding", 0), str):
        return f"padding {heavy.attr('padding')!r}"
    if math.prod(program.shape(weight)) >= 2 ** 31:
        return "a weight of 2**31 elements or more"
    return None


def _conv_tiles(program: Program, heavy: Node) -> list[tuple[int, int, int, int, int]]:
    """`_CONV_TILES` ordered for the convolution's output on the main input set (pixels x channels per group,
    once per group); tiles no wider than a group's channels need (16 at least: `tl.dot`'s least) before wider
    ones, whose extra channels are computed and thrown away (a depthwise conv2d has one channel a group)."""
    groups = int(heavy.attr("groups", 1))
    channels = heavy.shape[1]  # output channels (a transposed convolution's weight holds them second)
    group_n = channels // groups
    needed = max(16, 1 << max(group_n - 1, 0).bit_length())
    tiles = sorted(_CONV_TILES, key=lambda tile: tile[1] > needed)
    return by_fill(tiles, math.prod(heavy.shape) // max(channels, 1), group_n, groups)


def _conv_fixed(program: Program, heavy: Node, config: Config) -> dict[str, Any]:
    """The constants of the generated convolution (`_conv.j2`) for `config`: the weight's sizes, the options, the
    masks its loads need (none along K or N where the tiles divide them, none along a dim without padding: every
    tap then lands inside the input), and the output's sizes as Python (`out_h`) and kernel (`oh`) expressions."""
    two_d = heavy.op == "conv2d"
    c_out, group_c, *taps = program.shape(str(heavy.value_args[1]))
    groups = int(heavy.attr("groups", 1))
    options = {key: [int(v) for v in heavy.attr(key, (default,) * len(taps))]
               for key, default in (("stride", 1), ("padding", 0), ("dilation", 1))}
    group_n, k = c_out // groups, group_c * math.prod(taps)
    tiles_g = -(-group_n // config["BLOCK_N"])
    even_k, even_n = k % config["BLOCK_K"] == 0, group_n % config["BLOCK_N"] == 0
    n_ok = "rg < GROUP_N" if groups > 1 else "rn < N"
    fixed: dict[str, Any] = {"two_d": two_d, "c_in": group_c * groups, "c_out": c_out, "k": k, "groups": groups,
                             "group_c": group_c, "group_n": group_n, "tiles_g": tiles_g, "tiles_n": tiles_g * groups,
                             "even_n": even_n}
    x_mask = ["(rm < M)[None, :]"]  # the gathered input's tile is K x pixels, the output's channels x pixels
    for index, (axis, size, kernel_size) in enumerate((("h", "height", "H"), ("w", "width", "W"))[-len(taps):]):
        tap, stride, pad, dilation = (taps[index], options["stride"][index], options["padding"][index],
                                      options["dilation"][index])
        change = 2 * pad - dilation * (tap - 1) - 1
        fixed.update({f"k{axis}": tap, f"s{axis}": stride, f"p{axis}": pad, f"d{axis}": dilation,
                      f"out_{axis}": _conv_size(size, change, stride),
                      f"o{axis}": _conv_size(kernel_size, change, stride)})
        if pad:
            x_mask.append(f"(i{axis} >= 0) & (i{axis} < {kernel_size})")
    fixed["x_mask"] = " & ".join(x_mask + ([] if even_k else ["(k < K)[:, None]"]))
    # Tap-major K (`_conv.j2`): one tap and BLOCK_K of its channels per step, so that a step's gather is one
    # offset per pixel and the padding's test one per pixel, not per element of the K x pixels tile. Only where a
    # group's channels fill a step's BLOCK_K: with fewer (an RGB stem's 3), the steps would be mostly zeros.
    block_k = config["BLOCK_K"]
    fixed["tap_major"] = group_c >= block_k
    fixed["c_blocks"] = -(-group_c // block_k)
    fixed["taps"] = math.prod(taps)
    even_c = group_c % block_k == 0
    dims = (("h", "H"), ("w", "W"))[-len(taps):]
    tap_mask = ["(rm < M)"] + [f"(i{axis} >= 0) & (i{axis} < {size})" for axis, size in dims if fixed[f"p{axis}"]]
    fixed["tap_x_mask"] = f"({' & '.join(tap_mask)})[None, :]" + ("" if even_c else f" & (c < {group_c})[:, None]")
    fixed["tap_w_mask"] = " & ".join(([] if even_n else [f"({n_ok})[:, None]"]) +
                                     ([] if even_c else [f"(c < {group_c})[None, :]"]))
    fixed["w_mask"] = " & ".join(([] if even_n else [f"({n_ok})[:, None]"]) + ([] if even_k else ["(k < K)[None, :]"]))
    fixed["out_mask"] = "(rm < M)[None, :]" + ("" if even_n else f" & ({n_ok})[:, None]")
    return fixed


def _conv_size(size: str, change: int, stride: int) -> str:
    """The expression of a convolution's output size along one dim: (size + change) // stride + 1, where change
    is 2 * padding - dilation * (taps - 1) - 1, written as simply as the numbers allow ('height' for a 3x3 with
    padding 1)."""
    if stride == 1:
        change += 1
        return size if change == 0 else f"{size} {'+' if change > 0 else '-'} {abs(change)}"
    numerator = size if change == 0 else f"({size} {'+' if change > 0 else '-'} {abs(change)})"
    return f"{numerator} // {stride} + 1"


def _first(value: Any, default: int) -> int:
    """A conv attribute as one int (the IR keeps tuples, one entry per spatial dim)."""
    if value is None:
        return default
    return int(value[0]) if isinstance(value, (tuple, list)) else int(value)
