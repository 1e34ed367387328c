"""Causal depthwise conv1d in Triton, computed directly without the padded output.

A program takes one (batch, channel) row and a block of output positions; the K taps are unrolled at
compile time, each a shifted, masked load of the row (positions before the start read as zero), so the
row is read from memory once and the other K - 1 reads hit the cache.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _causal_dwconv(x_ptr, w_ptr, bias_ptr, y_ptr, channels, length, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    channel = row % channels
    row_start = row.to(tl.int64) * length
    acc = tl.zeros((BLOCK,), dtype=tl.float32) + tl.load(bias_ptr + channel)
    for k in tl.static_range(TAPS):
        source = t - (TAPS - 1) + k
        xv = tl.load(x_ptr + row_start + source, mask=(source >= 0) & (source < length), other=0.0)
        acc += tl.load(w_ptr + channel * TAPS + k) * xv
    tl.store(y_ptr + row_start + t, acc, mask=t < length)


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        # Same layer as Model, so a shared seed gives the same weight and bias.
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, groups=channels, padding=kernel_size - 1
        )

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, channels, length = x.shape
        taps = self.conv.weight.shape[-1]
        block = max(16, min(1024, triton.next_power_of_2(length)))
        grid = (batch * channels, triton.cdiv(length, block))
        _causal_dwconv[grid](x, self.conv.weight, self.conv.bias, y, channels, length, TAPS=taps, BLOCK=block)
        return y
