"""A small image classifier with the layers whose training behaviour differs from eval:
BatchNorm (running statistics are updated in a training step) and Dropout (random masks).

    input float32[B, 3, 32, 32]
    [Conv2d(3->16, 3x3, pad 1) -> BatchNorm2d -> ReLU], 3 x [16->16 likewise]
    MaxPool2d(2)                                                  # 16x16
    [Conv2d(16->32) -> BatchNorm2d -> ReLU], 2 x [32->32 likewise]
    MaxPool2d(2)                                                  # 8x8
    [Conv2d(32->64) -> BatchNorm2d -> ReLU]
    Dropout(0.25) -> flatten -> Linear(64*8*8, 10)
    target int64[B] in 0..10, loss cross_entropy.

Deep enough at full resolution that activations, not the first block's backward,
set the peak: the end-to-end tests plan it at 70 % and 50 % of its profiled peak.
"""

from torch import nn

from .specs import TrainingSpecs

CLASSES = 10
IMAGE_SIZE = 32


def _conv_bn_relu(in_channels: int, out_channels: int) -> list:
    # The convolution's bias is kept (as a user would write it) so the BatchNorm sees it.
    return [nn.Conv2d(in_channels, out_channels, 3, padding=1), nn.BatchNorm2d(out_channels), nn.ReLU()]


def build(dropout: float = 0.25) -> nn.Module:
    pooled_size = IMAGE_SIZE // 4  # two MaxPool2d(2)
    return nn.Sequential(
        *_conv_bn_relu(3, 16),
        *_conv_bn_relu(16, 16),
        *_conv_bn_relu(16, 16),
        *_conv_bn_relu(16, 16),
        nn.MaxPool2d(2),
        *_conv_bn_relu(16, 32),
        *_conv_bn_relu(32, 32),
        *_conv_bn_relu(32, 32),
        nn.MaxPool2d(2),
        *_conv_bn_relu(32, 64),
        nn.Dropout(dropout),
        nn.Flatten(),
        nn.Linear(64 * pooled_size * pooled_size, CLASSES),
    )


def training_specs(batch: int = 8) -> TrainingSpecs:
    return TrainingSpecs(
        inputs=[f"float32[{batch},3,{IMAGE_SIZE},{IMAGE_SIZE}]"],
        target=f"int64[{batch}]:0..{CLASSES}",
        loss="cross_entropy",
    )
