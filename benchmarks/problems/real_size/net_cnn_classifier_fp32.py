"""A small CNN image classifier at batch 128 on 64x64 images: three conv-batchnorm-ReLU stages (64, 128, 256
channels) with max pooling between, global average pooling and a 100-way linear head. About 40 GFLOP per call.
"""
import torch
import torch.nn as nn

BATCH = 128
IMAGE = 64
CLASSES = 100


def _stage(channels_in, channels_out):
    return [nn.Conv2d(channels_in, channels_out, 3, padding=1, bias=False), nn.BatchNorm2d(channels_out), nn.ReLU()]


class Model(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(
            *_stage(3, 64), nn.MaxPool2d(2),
            *_stage(64, 128), nn.MaxPool2d(2),
            *_stage(128, 256),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(256, classes)
        for module in self.features:
            if isinstance(module, nn.BatchNorm2d):
                with torch.no_grad():
                    module.running_mean.uniform_(-0.2, 0.2)
                    module.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, images):
        return self.head(torch.flatten(self.features(images), 1))


def get_inputs():
    return [torch.randn(BATCH, 3, IMAGE, IMAGE)]


def get_init_inputs():
    return [CLASSES]
