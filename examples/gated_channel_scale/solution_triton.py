"""Fused per-channel gate in Triton: one read of x, one write of y, no temporaries.

A program takes one (batch, channel) row and a block of its time steps, so the channel's scale and shift
are two scalar loads. x * sigmoid(x * s) is computed as x / (1 + exp(-x * s)): where exp overflows the
quotient goes to zero, which is the limit it should have.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gate(x_ptr, scale_ptr, shift_ptr, y_ptr, channels, length, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = t < length
    channel = row % channels
    s = tl.load(scale_ptr + channel)
    b = tl.load(shift_ptr + channel)
    offsets = row.to(tl.int64) * length + t
    v = tl.load(x_ptr + offsets, mask=inside)
    tl.store(y_ptr + offsets, v / (1.0 + tl.exp(-v * s)) + b, mask=inside)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        # Same creation order as Model, so a shared seed gives equal parameters.
        self.scale = nn.Parameter(torch.rand(channels) + 0.5)
        self.shift = nn.Parameter(torch.randn(channels) * 0.1)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, channels, length = x.shape
        block = max(16, min(1024, triton.next_power_of_2(length)))
        grid = (batch * channels, triton.cdiv(length, block))
        _gate[grid](x, self.scale, self.shift, y, channels, length, BLOCK=block)
        return y
