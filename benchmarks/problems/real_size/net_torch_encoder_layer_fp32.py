"""PyTorch's own nn.TransformerEncoderLayer (post-norm, ReLU MLP, nn.MultiheadAttention inside) in fp32, inference
mode, batch 16 x 1024 tokens of width 512 with 8 heads. About 137 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 16
SEQ = 1024
WIDTH = 512
HEADS = 8
MLP = 2048


class Model(nn.Module):
    def __init__(self, width, heads, mlp):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=mlp, dropout=0.0, batch_first=True)
        self.eval()

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, WIDTH)]


def get_init_inputs():
    return [WIDTH, HEADS, MLP]
