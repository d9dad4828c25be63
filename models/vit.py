"""torchvision's VisionTransformer at a CPU-sized shape, scripted.

Stands for a public model nobody here wrote, exported the way its authors support:
torch.jit.script of torchvision's own code. Its graph holds what scripted library code
brings: the prim::If checks of F.multi_head_attention_forward (with raise branches and
prim::Uninitialized values), torch._assert on the image size, and attribute reads of
hyper-parameters.

    input  float32[B, 3, 32, 32]
    VisionTransformer(image_size 32, patch_size 8 -> 16 patches + class token,
        4 layers, 4 heads, hidden 64, MLP 128, no dropout, 10 classes)
    output float32[B, 10]; target int64[B] in 0..10, loss cross_entropy.
"""

import torchvision
from torch import nn

from .specs import TrainingSpecs

IMAGE_SIZE = 32
CLASSES = 10


def build(image_size: int = IMAGE_SIZE, layers: int = 4, width: int = 64) -> nn.Module:
    return torchvision.models.VisionTransformer(
        image_size=image_size, patch_size=8, num_layers=layers, num_heads=4, hidden_dim=width, mlp_dim=2 * width,
        num_classes=CLASSES)


def training_specs(batch: int = 32, image_size: int = IMAGE_SIZE) -> TrainingSpecs:
    return TrainingSpecs(
        inputs=[f"float32[{batch},3,{image_size},{image_size}]"],
        target=f"int64[{batch}]:0..{CLASSES}",
        loss="cross_entropy",
    )
