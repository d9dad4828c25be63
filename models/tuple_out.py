"""An MLP classifier that returns (logits, features), as a tuple.

Stands for models that hand back more than their prediction: embedding models and
classifiers returning their penultimate features alongside the logits (for a contrastive
or distillation term), or torchvision's GoogLeNet/Inception with auxiliary outputs. The
graph ends in prim::TupleConstruct of two tensors, one of which (features) is also the
input of the head.

    input  float32[B, 64]
    Linear(64, 128) -> ReLU, then 47 x (Linear(128, 128) -> ReLU)      = features [B, 128]
    Linear(128, 10)                                                     = logits   [B, 10]
    output (logits, features); loss "mean", no target: acprof's mean over every
    floating-point tensor of the output, logits.mean() + features.mean().

Both torch.jit.trace and torch.jit.script accept it.

Why 48 layers: checkpointing a chain with segments (not nested ones) keeps about 2*sqrt(n) of
its n layer outputs, and the outputs and their gradients stay live at the peak whatever is
recomputed, so the share of the removable bytes a plan can remove grows with depth. Measured
at the floor acprof reaches (batch 1024, CPU, 2026-11-26): 6 layers 18 % (the exact solver
proves no segment set does better), 24 layers 54 %, 48 layers 67 %, 96 layers 76 %. Issue 9
asks 60 % of every new reference model; 48 layers is the shallowest of these that allows it.
"""

from typing import Tuple

from torch import Tensor, nn

from .specs import TrainingSpecs

IN_FEATURES = 64
HIDDEN = 128
HIDDEN_LAYERS = 48
CLASSES = 10


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU()]
        for _ in range(HIDDEN_LAYERS - 1):
            layers += [nn.Linear(HIDDEN, HIDDEN), nn.ReLU()]
        self.trunk = nn.Sequential(*layers)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        features = self.trunk(x)
        return self.head(features), features


def build() -> nn.Module:
    return TupleOut()


def training_specs(batch: int = 1024) -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{batch},{IN_FEATURES}]"], target="", loss="mean")
