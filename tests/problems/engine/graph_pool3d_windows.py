"""3-D pooling: a max pool layer (stride, padding, dilation), an average pool by function (padding left out of the
divisor, ceil mode) and an adaptive average pool to a size dividing the input's, each an output of its own."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1))
        self.adaptive = nn.AdaptiveAvgPool3d((1, 3, 2))

    def forward(self, x):
        biggest = self.pool(x)
        average = F.avg_pool3d(torch.tanh(x), kernel_size=3, stride=2, padding=1, ceil_mode=True,
                               count_include_pad=False)
        return biggest * 2.0, average, self.adaptive(x)


def get_inputs():
    return [torch.randn(2, 3, 7, 9, 10)]


def get_input_variants():
    return [[torch.randn(1, 3, 7, 9, 10)], [torch.randn(3, 3, 7, 9, 10)]]


def get_init_inputs():
    return []
