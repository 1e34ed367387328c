"""Cross entropy with class indices, by layer and by function: one loss per item over a (batch, classes, length)
input, and the mean over a (batch, classes) input whose targets include the ignored index."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.CrossEntropyLoss(reduction="none")

    def forward(self, logits, target, scores, labels):
        per_item = self.loss(logits * 1.5, target)
        return per_item, F.cross_entropy(scores, labels, ignore_index=3)


def get_inputs():
    return [torch.randn(5, 11, 7), torch.randint(0, 11, (5, 7)), torch.randn(13, 9), torch.randint(0, 9, (13,))]


def get_input_variants():
    return [[torch.randn(3, 11, 7), torch.randint(0, 11, (3, 7)), torch.randn(6, 9), torch.randint(0, 9, (6,))]]


def get_init_inputs():
    return []
