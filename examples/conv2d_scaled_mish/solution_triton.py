"""Conv2d 3x3 + per-channel-scaled Mish in one Triton kernel: an implicit GEMM with the epilogue on the tile.

A program computes a block of output pixels (flattened over batch, height and width) for a block of
output channels. The reduction runs over the nine taps (unrolled) and the input channels in blocks: each
step loads the shifted input pixels (zero outside the image: the padding) and the matching weights and
adds their product with tl.dot in full float32 (input_precision="ieee"; TF32 would miss float32's
tolerance). tanh(softplus(t)) is (1 + 2q) / (1 + 2q + 2q^2) with q = e^-t; t is bounded below so q^2
stays finite (the factor is below 1e-17 there).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _conv_mish(x_ptr, w_ptr, bias_ptr, scale_ptr, y_ptr, batch, cin, cout, height, width,
               BLOCK_P: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_C: tl.constexpr):
    pixels = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    outs = tl.program_id(1) * BLOCK_O + tl.arange(0, BLOCK_O)
    chans = tl.arange(0, BLOCK_C)
    plane = height * width
    pixel_ok = pixels < batch * plane
    out_ok = outs < cout
    b = pixels // plane
    col = pixels % width
    row = (pixels // width) % height
    image = x_ptr + b.to(tl.int64) * cin * plane
    acc = tl.zeros((BLOCK_P, BLOCK_O), dtype=tl.float32)
    for tap in tl.static_range(9):
        hh = row + (tap // 3 - 1)
        ww = col + (tap % 3 - 1)
        inside = pixel_ok & (hh >= 0) & (hh < height) & (ww >= 0) & (ww < width)
        for c0 in range(0, cin, BLOCK_C):
            c = c0 + chans
            a = tl.load(image[:, None] + c[None, :] * plane + (hh * width + ww)[:, None],
                        mask=inside[:, None] & (c[None, :] < cin), other=0.0)
            wt = tl.load(w_ptr + outs[None, :] * (cin * 9) + c[:, None] * 9 + tap,
                         mask=out_ok[None, :] & (c[:, None] < cin), other=0.0)
            acc += tl.dot(a, wt, input_precision="ieee")
    v = acc + tl.load(bias_ptr + outs, mask=out_ok, other=0.0)[None, :]
    t = tl.maximum(v * tl.load(scale_ptr + outs, mask=out_ok, other=0.0)[None, :], -40.0)
    q = tl.exp(-t)
    out = v * (1.0 + 2.0 * q) / (1.0 + 2.0 * q + 2.0 * q * q)
    offsets = (b.to(tl.int64) * cout * plane + row * width + col)[:, None] + outs[None, :] * plane
    tl.store(y_ptr + offsets, out, mask=pixel_ok[:, None] & out_ok[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        # Created in the order of Model, so a shared seed gives the same parameters.
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.scale = nn.Parameter(torch.rand(out_channels) * 1.5 + 0.5)

    def forward(self, x):
        conv = self.conv
        if conv.stride != (1, 1) or conv.padding != (1, 1) or conv.dilation != (1, 1) or conv.groups != 1:
            raise ValueError("this kernel computes a 3x3 convolution with stride 1, padding 1, one group")
        x = x.contiguous()
        batch, cin, height, width = x.shape
        cout = conv.weight.shape[0]
        y = torch.empty((batch, cout, height, width), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(batch * height * width, 64), triton.cdiv(cout, 32))
        _conv_mish[grid](x, conv.weight, conv.bias, self.scale, y, batch, cin, cout, height, width,
                         BLOCK_P=64, BLOCK_O=32, BLOCK_C=32)
        return y
