"""One Adam step with decoupled weight decay over 6.7e7 fp32 parameters, written as tensor arithmetic: four inputs
(parameters, gradients, two moments), three outputs (the new parameters and moments). About 1.9 GB moved per call.
"""
import torch
import torch.nn as nn

NUMEL = 8192 * 8192


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay
        self.first_correction = 1.0 - beta1**step
        self.second_correction = 1.0 - beta2**step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        exp_avg = self.beta1 * exp_avg + (1.0 - self.beta1) * grad
        exp_avg_sq = self.beta2 * exp_avg_sq + (1.0 - self.beta2) * grad * grad
        denom = torch.sqrt(exp_avg_sq / self.second_correction) + self.eps
        update = (exp_avg / self.first_correction) / denom
        param = param * (1.0 - self.lr * self.weight_decay) - self.lr * update
        return param, exp_avg, exp_avg_sq


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL) * 0.01, torch.randn(NUMEL) * 0.001, torch.rand(NUMEL) * 1e-4]


def get_init_inputs():
    return [1e-3, 0.9, 0.999, 1e-8, 0.01, 100]
