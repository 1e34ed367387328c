import not_a_real_module_kforge  # noqa: F401
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(2)]


def get_init_inputs():
    return []
