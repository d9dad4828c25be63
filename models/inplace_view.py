"""A model that writes, in place and through a view, into a tensor it made much earlier.

Stands for code that fills part of an existing buffer instead of concatenating: writing
extra features into reserved channels (`h[:, :k] += extra`, `h.narrow(1, 0, k).add_(y)`),
KV-cache updates, in-place positional or mask edits. Eager PyTorch trains it correctly
(nothing saved for backward holds h when it is written; autograd records the write as
CopySlices on h), but a checkpoint segment that begins after h is made and contains the
write writes into h again when it is recomputed, so gradients are wrong: over the segment
from `side` to the tail's first Linear, torch.utils.checkpoint(use_reentrant=False) gives
the same loss and gradients 1.7e-3 off (the reentrant variant raises instead).

    input  float32[B, 64]
    h = Linear(64, 128)(x)                        # made first; nothing saves it yet
    y = Linear(64, 128) -> ReLU -> Linear(128, 128) -> ReLU -> Linear(128, 128) -> ReLU
        -> Linear(128, 32)  of x                  # several layers that do not touch h
    h.narrow(1, 0, 32).add_(y)                    # the in-place write through a view of h
    out = Linear(128, 10)(ReLU(Linear(128, 128)(ReLU(h))))   # h used afterwards
    output float32[B, 10]; loss "mean", no target.

Traced: the trace records aten::narrow and aten::add_ as they run, so the write stays in
the graph (torch.jit.script keeps it too).
"""

from torch import Tensor, nn

from .specs import TrainingSpecs

IN_FEATURES = 64
HIDDEN = 128
WRITTEN = 32
CLASSES = 10


class InplaceView(nn.Module):
    def __init__(self):
        super().__init__()
        self.early = nn.Linear(IN_FEATURES, HIDDEN)
        self.side = nn.Sequential(
            nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
            nn.Linear(HIDDEN, WRITTEN),
        )
        self.tail = nn.Sequential(nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))

    def forward(self, x: Tensor) -> Tensor:
        h = self.early(x)
        y = self.side(x)
        h.narrow(1, 0, WRITTEN).add_(y)
        return self.tail(h)


def build() -> nn.Module:
    return InplaceView()


def training_specs(batch: int = 1024) -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{batch},{IN_FEATURES}]"], target="", loss="mean")
