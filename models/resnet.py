"""torchvision's ResNet-18 and ResNet-50, randomly initialised, as image classifiers.

    input float32[B, 3, S, S]; target int64[B] in 0..1000; loss cross_entropy.
"""

import torchvision
from torch import nn

from .specs import TrainingSpecs

CLASSES = 1000
_CONSTRUCTORS = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50}


def build(depth: str = "resnet18") -> nn.Module:
    constructor = _CONSTRUCTORS[depth]
    try:
        # torchvision >= 0.13 (0.14 on Debian 12, current releases on the GPU machine).
        return constructor(weights=None)
    except TypeError:
        # Older torchvision knows only the boolean.
        return constructor(pretrained=False)


def training_specs(batch: int = 2, image_size: int = 64) -> TrainingSpecs:
    return TrainingSpecs(
        inputs=[f"float32[{batch},3,{image_size},{image_size}]"],
        target=f"int64[{batch}]:0..{CLASSES}",
        loss="cross_entropy",
    )
