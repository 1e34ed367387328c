"""Candidate for tests/problems/variants_sum_rows.py that only works for the main input's shape."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.reshape(32, 64).sum(dim=1)
