"""Smooth L1 (a layer, mean; a function with beta, per element), KL divergence (sum, and batchmean of log targets)
and the triplet margin loss (a layer with swap; a function with p = 1, per item) of odd-sized inputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.smooth = nn.SmoothL1Loss()
        self.triplet = nn.TripletMarginLoss(margin=0.7, swap=True)

    def forward(self, x, y, logp, q, a, p, n):
        return (self.smooth(x, y), F.smooth_l1_loss(x * 0.5, y, reduction="none", beta=0.4),
                F.kl_div(logp, q, reduction="sum"),
                F.kl_div(logp, torch.log(q + 0.05), reduction="batchmean", log_target=True),
                self.triplet(a, p, n), F.triplet_margin_loss(a, p, n, p=1, reduction="none"))


def _probabilities(rows):
    q = torch.softmax(torch.randn(rows, 13), dim=1)
    q[0, 2] = 0.0  # a zero probability: its term is zero, not nan
    return q


def _inputs(rows):
    return [torch.randn(rows, 5, 9), torch.randn(rows, 5, 9), torch.log_softmax(torch.randn(rows, 13), dim=1),
            _probabilities(rows), torch.randn(rows, 17), torch.randn(rows, 17), torch.randn(rows, 17)]


def get_inputs():
    return _inputs(7)


def get_input_variants():
    return [_inputs(4)]


def get_init_inputs():
    return []
