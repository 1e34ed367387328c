"""nn.MultiheadAttention on (batch, sequence, width) inputs, self-attention with a causal mask built from the
length, without the weights; then a residual and a layer norm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        t = x.size(1)
        mask = torch.triu(torch.ones(t, t, device=x.device, dtype=torch.bool), diagonal=1)
        attended, _ = self.attention(x, x, x, attn_mask=mask, need_weights=False, is_causal=True)
        return self.norm(x + attended)


def get_inputs():
    return [torch.randn(3, 10, 21)]


def get_init_inputs():
    return [21, 3]
