"""A DenseNet-style image classifier: each layer reads the concatenation of every feature
map before it in its block and appends its own.

Stands for DenseNet (torchvision's densenet121 and kin) and other concatenation-heavy
models: a Python list of tensors grows inside forward and each layer starts with
torch.cat(features, 1), so the graph holds prim::ListConstruct / aten::append (scripted)
or prim::ListConstruct per cat (traced), and the concatenations are the largest
activations (the reason memory-efficient DenseNet recomputes them).

    input  float32[B, 3, 32, 32]
    stem: Conv2d(3->16, 3x3) -> BatchNorm2d -> ReLU
    dense block 1 at 32x32: 12 layers, each Conv2d(cat -> 12, 3x3) -> BatchNorm2d -> ReLU
        on torch.cat of the stem's output and the earlier layers' (16 + 12*12 = 160 channels)
    transition: Conv2d(160->32, 1x1) -> BatchNorm2d -> ReLU -> AvgPool2d(2)     # 16x16
    dense block 2 at 16x16: 12 layers likewise (32 + 12*12 = 176 channels)
    BatchNorm2d -> ReLU -> global average pool -> Linear(176, 10)
    target int64[B] in 0..10, loss cross_entropy.

Twelve layers per block, as DenseNet-121's second block (6, 12, 24, 16): what the concatenations
hold grows with the square of a block's depth, the gradients of its feature maps (all live at
once in its backward, whatever is recomputed) only linearly, so a shallow block says little
about DenseNets. With 4 layers per block the smallest reachable peak removed 42 % of the
removable bytes; with 8, 53 %; with 12, 61 %.

Both torch.jit.trace and torch.jit.script accept it.
"""

from typing import List

import torch
from torch import Tensor, nn

from .specs import TrainingSpecs

CLASSES = 10
IMAGE_SIZE = 32
STEM = 16
GROWTH = 12
LAYERS_PER_BLOCK = 12
TRANSITION = 32


def _conv_bn_relu(in_channels: int, out_channels: int, kernel: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, padding=kernel // 2, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
    )


class DenseBlock(nn.Module):
    def __init__(self, in_channels: int, layers: int, growth: int):
        super().__init__()
        self.layers = nn.ModuleList(
            [_conv_bn_relu(in_channels + i * growth, growth, 3) for i in range(layers)])
        self.out_channels = in_channels + layers * growth

    def forward(self, x: Tensor) -> Tensor:
        features: List[Tensor] = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


class DenseNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = _conv_bn_relu(3, STEM, 3)
        self.block1 = DenseBlock(STEM, LAYERS_PER_BLOCK, GROWTH)
        self.transition = nn.Sequential(_conv_bn_relu(self.block1.out_channels, TRANSITION, 1), nn.AvgPool2d(2))
        self.block2 = DenseBlock(TRANSITION, LAYERS_PER_BLOCK, GROWTH)
        self.final_norm = nn.BatchNorm2d(self.block2.out_channels)
        self.final_activation = nn.ReLU()
        self.head = nn.Linear(self.block2.out_channels, CLASSES)

    def forward(self, images: Tensor) -> Tensor:
        x = self.block2(self.transition(self.block1(self.stem(images))))
        x = self.final_activation(self.final_norm(x))
        return self.head(torch.flatten(torch.mean(x, dim=[2, 3]), 1))


def build() -> nn.Module:
    return DenseNetLike()


def training_specs(batch: int = 4) -> TrainingSpecs:
    return TrainingSpecs(
        inputs=[f"float32[{batch},3,{IMAGE_SIZE},{IMAGE_SIZE}]"],
        target=f"int64[{batch}]:0..{CLASSES}",
        loss="cross_entropy",
    )
