"""Honest Triton candidate for batch_norm_train: one program per channel computes the batch's mean and variance and
moves the layer's running statistics (and its count of batches) as torch does; a second kernel normalizes.

Runs on a GPU, and on the CPU through Triton's interpreter (the cpu platform sets TRITON_INTERPRET=1).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _statistics(x_ptr, mean_ptr, inv_std_ptr, running_mean_ptr, running_var_ptr, count_ptr, batch, channels, plane,
                momentum, eps, BLOCK: tl.constexpr):
    channel = tl.program_id(0)
    n = batch * plane
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        index = start + tl.arange(0, BLOCK)
        inside = index < n
        offsets = (index // plane) * channels * plane + channel * plane + index % plane
        total += tl.load(x_ptr + offsets, mask=inside, other=0.0)
    mean = tl.sum(total, axis=0) / n
    squares = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        index = start + tl.arange(0, BLOCK)
        inside = index < n
        offsets = (index // plane) * channels * plane + channel * plane + index % plane
        centered = tl.where(inside, tl.load(x_ptr + offsets, mask=inside, other=0.0) - mean, 0.0)
        squares += centered * centered
    variance = tl.sum(squares, axis=0) / n
    tl.store(mean_ptr + channel, mean)
    tl.store(inv_std_ptr + channel, 1.0 / tl.sqrt(variance + eps))
    # The running statistics take the unbiased variance, as torch's batch norm does.
    old_mean = tl.load(running_mean_ptr + channel)
    old_var = tl.load(running_var_ptr + channel)
    tl.store(running_mean_ptr + channel, (1.0 - momentum) * old_mean + momentum * mean)
    tl.store(running_var_ptr + channel, (1.0 - momentum) * old_var + momentum * variance * n / (n - 1))
    if channel == 0:
        tl.store(count_ptr, tl.load(count_ptr) + 1)


@triton.jit
def _normalize(x_ptr, mean_ptr, inv_std_ptr, weight_ptr, bias_ptr, out_ptr, total, channels, plane,
               BLOCK: tl.constexpr):
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = index < total
    channel = (index // plane) % channels
    x = tl.load(x_ptr + index, mask=inside)
    scale = tl.load(inv_std_ptr + channel, mask=inside) * tl.load(weight_ptr + channel, mask=inside)
    y = (x - tl.load(mean_ptr + channel, mask=inside)) * scale + tl.load(bias_ptr + channel, mask=inside)
    tl.store(out_ptr + index, tl.maximum(y, 0.0), mask=inside)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, momentum=0.2)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = x.contiguous()
        batch, channels = x.shape[0], x.shape[1]
        plane = x.numel() // (batch * channels)
        norm = self.norm
        mean = torch.empty(channels, device=x.device, dtype=torch.float32)
        inv_std = torch.empty_like(mean)
        _statistics[(channels,)](x, mean, inv_std, norm.running_mean, norm.running_var, norm.num_batches_tracked,
                                 batch, channels, plane, norm.momentum, norm.eps, BLOCK=128)
        out = torch.empty_like(x)
        total = x.numel()
        _normalize[(triton.cdiv(total, 256),)](x, mean, inv_std, norm.weight, norm.bias, out, total, channels, plane,
                                               BLOCK=256)
        return out
