"""Updates the running statistics as the reference does, with the layer held under another attribute
(`held.norm.running_mean` stands for the reference's `norm.running_mean`); judged with the policy off: it calls
PyTorch to compute."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.held = nn.Module()
        self.held.norm = nn.BatchNorm2d(channels, momentum=0.2)
        with torch.no_grad():
            self.held.norm.weight.uniform_(0.5, 1.5)
            self.held.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        norm = self.held.norm
        norm.num_batches_tracked += 1
        normed = F.batch_norm(x, norm.running_mean, norm.running_var, norm.weight, norm.bias, training=True,
                              momentum=norm.momentum, eps=norm.eps)
        return torch.relu(normed)
