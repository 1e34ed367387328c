"""Image-text similarity logits of a contrastive model: exp(t) * images @ texts^T with a learned temperature t,
4096 image by 8192 text embeddings of 1024 (the second operand transposed). About 69 GFLOP per call.
"""
import math

import torch
import torch.nn as nn

IMAGES = 4096
TEXTS = 8192
EMBED = 1024


class Model(nn.Module):
    def __init__(self, initial_temperature):
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(math.log(1.0 / initial_temperature)))

    def forward(self, images, texts):
        return self.log_scale.exp() * (images @ texts.t())


def get_inputs():
    return [torch.randn(IMAGES, EMBED), torch.randn(TEXTS, EMBED)]


def get_init_inputs():
    return [0.07]
