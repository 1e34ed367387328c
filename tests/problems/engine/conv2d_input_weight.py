"""A convolution by a weight the caller passes (an input, not a parameter), then tanh: the generated
convolution needs its weight's sizes fixed, so only the vendor's convolution lowers it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, weight):
        return torch.tanh(F.conv2d(x, weight, padding=1))


def get_inputs():
    return [torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3)]


def get_init_inputs():
    return []
