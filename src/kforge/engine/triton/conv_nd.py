"""The constants of the generated conv3d and transposed convolution (`conv_transpose1d`/`conv_transpose2d`).

Both are implicit GEMMs like the conv1d/conv2d of `conv` (output pixels x output channels, K = input channels per
group x taps, the input gathered through computed indices, the epilogue on the accumulator), written by
`_conv_nd.j2` for any number of spatial dims. A transposed convolution is a gather over the output, never a
zero-inserted input: each output element sums the inputs that map to it. Along a dim with stride > 1 and
dilation 1 the outputs are split into phases (o = q * stride + r), a program holding one phase, so K holds
only the taps that land on an input (ceil(taps / stride) of them, where a zero-inserted input or a masked
gather would try them all); along any other dim every tap is tried, masked where it falls between inputs.
`ConvNdLowering` renders them through the same offers as conv1d/conv2d, with these constants.
"""

from __future__ import annotations

import math
from typing import Any

from kforge.engine.ir import CONV_TRANSPOSE_OPS, Node, Program
from kforge.engine.triton.conv import ConvLowering, _conv_size
from kforge.engine.triton.lowering import Config

_AXES = ("d", "h", "w")
_SIZES = ("depth", "height", "width")


class ConvNdLowering(ConvLowering):
    """The generated convolutions, conv3d and the transposed ones included."""

    def conv_fixed(self, heavy: Node, config: Config) -> dict[str, Any]:
        if heavy.op in ("conv1d", "conv2d"):
            return super().conv_fixed(heavy, config)
        return conv_nd_fixed(self.program, heavy, config)


def conv_nd_fixed(program: Program, heavy: Node, config: Config) -> dict[str, Any]:
    """The context `conv` of `_conv_nd.j2` for `heavy` (a conv3d or a transposed convolution) and `config`."""
    transposed = heavy.op in CONV_TRANSPOSE_OPS
    weight = program.shape(str(heavy.value_args[1]))
    groups = int(heavy.attr("groups", 1))
    taps = tuple(int(t) for t in weight[2:])
    spatial = len(taps)
    if transposed:
        c_in, group_n = weight[0], weight[1]
        group_c, c_out = c_in // groups, group_n * groups
    else:
        c_out, group_c = weight[0], weight[1]
        c_in, group_n = group_c * groups, c_out // groups
    options = {key: [int(v) for v in heavy.attr(key, (default,) * spatial)]
               for key, default in (("stride", 1), ("padding", 0), ("dilation", 1), ("output_padding", 0))}
    dims: list[dict[str, Any]] = []
    for index in range(spatial):
        a = _AXES[3 - spatial + index]
        tap, stride, pad, dilation = (taps[index], options["stride"][index], options["padding"][index],
                                      options["dilation"][index])
        # Output size: (size + change) // stride + 1 for a convolution, (size - 1) * stride + change for a
        # transposed one.
        phased = transposed and stride > 1 and dilation == 1
        dims.append({"a": a, "A": a.upper(), "k": tap, "s": stride, "p": pad, "d": dilation, "phased": phased,
                     "j": -(-tap // stride), "tap": ("j" if phased else "t") + a, "size": _SIZES[3 - spatial + index],
                     "i_name": "I" + a.upper(), "o_name": "O" + a.upper(), "out_name": f"out_{a}"})
        size, kernel_size = dims[-1]["size"], dims[-1]["i_name"]
        if transposed:
            change = dilation * (tap - 1) + options["output_padding"][index] + 1 - 2 * pad
            dims[-1]["out"] = _transposed_size(size, stride, change)
            dims[-1]["o"] = _transposed_size(kernel_size, stride, change)
        else:
            change = 2 * pad - dilation * (tap - 1) - 1
            dims[-1]["out"] = _conv_size(size, change, stride)
            dims[-1]["o"] = _conv_size(kernel_size, change, stride)
    counts = [d["j"] if d["phased"] else d["k"] for d in dims]
    for index, d in enumerate(dims):
        later_inputs = [e["i_name"] for e in dims[index + 1:]]
        d["x_stride"] = "(" + " * ".join(later_inputs) + ")" if later_inputs else ""
        inner = math.prod(counts[index + 1:])
        d["tap_of_k"] = (f"(k // {inner})" if inner > 1 else "k") + f" % {counts[index]}"
    k = group_c * math.prod(counts)
    even_k, even_n = k % config["BLOCK_K"] == 0, group_n % config["BLOCK_N"] == 0
    n_ok = "rg < GROUP_N" if groups > 1 else "rn < N"
    w_mask = ([] if even_n else [f"({n_ok})[:, None]"]) + ([] if even_k else ["(k < K)[None, :]"])
    w_mask += [f"(t{d['a']} < K{d['A']})[None, :]" for d in dims if d["phased"]]
    tiles_g = -(-group_n // config["BLOCK_N"])
    return {
        "transposed": transposed, "dims": dims, "c_in": c_in, "c_out": c_out, "k": k, "taps": math.prod(taps),
        "groups": groups, "group_c": group_c, "group_n": group_n, "tiles_g": tiles_g, "tiles_n": tiles_g * groups,
        "even_n": even_n, "even_k": even_k, "n_ok": n_ok, "w_mask": " & ".join(w_mask) or "None",
        "k_per_channel": math.prod(counts),
        "phases": math.prod(d["s"] for d in dims if d["phased"]),
        "x_base": _horner(dims, lambda d: f"i0{d['a']}", "i_name"),
        "k_offset": " + ".join(f"t{d['a']} * (D{d['A']} * {d['x_stride']})" if d["x_stride"] else
                               f"t{d['a']} * D{d['A']}" for d in dims),
        "tap_index": _horner(dims, lambda d: f"t{d['a']}", "k"),
        "out_pixel": _horner(dims, lambda d: f"o{d['a']}", "o_name"),
        "m_python": " * ".join(f"(({d['out_name']} + {d['s'] - 1}) // {d['s']})" if d["phased"] else d["out_name"]
                               for d in dims),
        "template": "_conv_nd.j2",
    }


def _horner(dims: list[dict[str, Any]], value: Any, size: str) -> str:
    """The flat index of per-dim values (the last dim the fastest): ((vd * SH + vh) * SW + vw), each S the
    dims' `size` entry (a kernel name, or a number)."""
    text = value(dims[0])
    for d in dims[1:]:
        text = f"{f'({text})' if ' ' in text else text} * {d[size]} + {value(d)}"
    return text


def _transposed_size(size: str, stride: int, change: int) -> str:
    """(size - 1) * stride + change, written as simply as the numbers allow."""
    constant = change - stride
    scaled = size if stride == 1 else f"{size} * {stride}"
    return scaled if constant == 0 else f"{scaled} {'+' if constant > 0 else '-'} {abs(constant)}"
