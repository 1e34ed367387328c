"""Tensors made in the forward: a number (torch.tensor on the input's device), zeros_like/ones_like/full_like used
by pointwise ops (constants), a full tensor and aranges that are returned or reduced (fill kernels), a torch.tensor
of evenly spaced numbers, positions compared with an index (a one-hot mask), and an arange the trace computes."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, labels):
        scale = torch.tensor(1.5, device=x.device)
        shifted = x * scale + torch.ones_like(x) - torch.full_like(x, 0.25)
        kept = torch.where(shifted > 0, shifted, torch.zeros_like(shifted))
        positions = torch.arange(x.shape[-1], device=x.device)
        one_hot = (labels.unsqueeze(-1) == positions).float()
        ramp = torch.arange(2, 9, 3, device=x.device, dtype=torch.float32)
        steps = torch.tensor([0.5, 1.0, 1.5], device=x.device)
        grid = torch.full((3, 5), 2.0, device=x.device).sum(0)
        traced = torch.arange(3) * 0.5  # no tensor argument: computed by the trace, a constant
        return kept + one_hot, ramp * steps + traced, grid, x.new_ones((2, 3)) * 3.0 + torch.arange(3, device=x.device)


def get_inputs():
    return [torch.randn(4, 6, 7), torch.randint(0, 7, (4, 6))]


def get_input_variants():
    return [[torch.randn(2, 6, 7), torch.randint(0, 7, (2, 6))]]


def get_init_inputs():
    return []
