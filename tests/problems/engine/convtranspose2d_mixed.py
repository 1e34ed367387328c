"""A ConvTranspose2d whose dims differ (stride (2, 3), padding (1, 0), output padding (1, 2), dilation (1, 2)),
with 3 groups; then ReLU. Along H (stride 2, dilation 1) it is split into phases, along W not."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(6, 9, (3, 4), stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                         dilation=(1, 2), groups=3)

    def forward(self, x):
        return torch.relu(self.deconv(x))


def get_inputs():
    return [torch.randn(2, 6, 5, 3)]


def get_input_variants():
    return [[torch.randn(1, 6, 1, 2)]]


def get_init_inputs():
    return []
