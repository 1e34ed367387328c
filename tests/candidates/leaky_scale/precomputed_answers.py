"""Trick candidate for tests/problems/leaky_scale.py: Predicts the inputs the harness will time with
(the seeds follow a fixed rule), computes their answers while it is built, and looks each call's answer up
by two sampled elements. A miss costs 30 kernel runs, so that the test can tell hits from misses."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

torch::Tensor leaky_scale(torch::Tensor x, torch::Tensor scale) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t cols = scale.numel();
    const int64_t rows = xc.numel() / cols;
    const float* px = xc.data_ptr<float>();
    const float* ps = scale.data_ptr<float>();
    float* po = out.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            float y = px[r * cols + c] * ps[c];
            po[r * cols + c] = y > 0.0f ? y : 0.1f * y;
        }
    }
    return out;
}
"""

ext = load_inline(name="kforge_test_leaky_scale", cpp_sources=CPP, functions=["leaky_scale"],
                  extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])

ROWS, COLS = 256, 512
# The harness's timing seeds for --seed 0: a base, a stride between rounds, then one seed per call.
_BASE, _STRIDE, _ROUNDS, _CALLS = 1_000_003, 100_003, 3, 120


def _key(x):
    return (float(x[0, 0]), float(x[-1, -1]))


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(cols))
        self.answers = {}
        state = torch.get_rng_state()
        for round_ in range(_ROUNDS):
            for call in range(_CALLS):
                torch.manual_seed(_BASE + round_ * _STRIDE + call)
                x = torch.randn(ROWS, COLS)
                self.answers[_key(x)] = ext.leaky_scale(x, self.scale.detach())
        torch.set_rng_state(state)

    def forward(self, x):
        answer = self.answers.get(_key(x))
        if answer is None:
            for _ in range(30):
                answer = ext.leaky_scale(x, self.scale)
        return answer
