"""A plain chain of N (Conv2d 3x3 pad 1, C->C channels) + ReLU pairs, loss "mean".

Every layer has the same cost and the same activation size (B*C*H*W floats), so the
planner's simulated timeline and the recompute cost of any segment are easy to predict;
tests compare the simulator against measurements of this model.

    input float32[B, C, H, W]  (default [8, 32, 32, 32])
    N x [Conv2d(C, C, 3, padding=1) -> ReLU]
"""

from torch import nn

from .specs import TrainingSpecs


def build(layers: int = 9, channels: int = 32) -> nn.Module:
    chain = []
    for _ in range(layers):
        chain += [nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*chain)


def training_specs(channels: int = 32, batch: int = 8, image_size: int = 32) -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{batch},{channels},{image_size},{image_size}]"], target="", loss="mean")
