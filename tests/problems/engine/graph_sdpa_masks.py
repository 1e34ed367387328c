"""scaled_dot_product_attention as people call it for causal attention: `is_causal=True`, a boolean lower
triangle built from the length as `attn_mask`, and a mask passed in as an input (boolean keep mask)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, q, k, v, keep):
        t = q.shape[2]
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        lower = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        built = F.scaled_dot_product_attention(q, k, v, attn_mask=lower)
        given = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.3)
        return causal - built, given


def get_inputs():
    keep = torch.rand(2, 1, 7, 7) > 0.3
    keep[..., 0] = True  # every query keeps a key: no row of -inf only
    return [torch.randn(2, 5, 7, 12), torch.randn(2, 5, 7, 12), torch.randn(2, 5, 7, 12), keep]


def get_init_inputs():
    return []
