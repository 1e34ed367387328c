"""A linear layer returning both its logits and their row softmax, as a tuple of two tensors.

Family: several outputs (one intermediate that is itself an output and feeds a reduction).
"""
import torch
import torch.nn as nn

BATCH = 256
IN_FEATURES = 512
CLASSES = 1000

OUTPUT_SHAPES = [(BATCH, CLASSES), (BATCH, CLASSES)]


class Model(nn.Module):
    def __init__(self, in_features, classes):
        super().__init__()
        self.linear = nn.Linear(in_features, classes)

    def forward(self, x):
        logits = self.linear(x)
        return logits, torch.softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, CLASSES]
