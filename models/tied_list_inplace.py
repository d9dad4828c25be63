"""A language model with the three things a front end most easily records differently: in-place
writes into activations, a Python list of block outputs read as one tensor, and a weight shared
by two ops (the token embedding, tied to the output head as GPT-2 ties them).

    input  int64[N] (N = B * T tokens, flat)
    h = Embedding(V, W)(tokens)
    for each of BLOCKS Linear(W, W):
        y = Linear(h); y.relu_()                   # in-place on the block's own output
        h = h + y; h.mul_(decay)                   # in-place on the residual stream
        outs.append(h)                             # a list of every block's stream
    logits = linear(LayerNorm(stack(outs).mean(0)), Embedding.weight)   # the tied head
    output float32[N, V]; loss cross_entropy against the tokens.

The embedding's weight gets two gradients, one through each use, summed into one: the front ends
must agree on that sum's bytes as they do on the rest (tests/python/eager_matches_torchscript_check.py).

Two choices keep the two front ends' executions the same, so that what the check compares is how
each records one step, not how torch runs two. The tokens are flat, so each Linear is one addmm
in both (on [B, T, W] TorchScript's one aten::linear node hides the addmm and view that eager's op
stream names, and eager then names the gradient of that inner addmm's output too). The decay is a
0-dim buffer: with a Python number, eager wraps it into a 0-dim float64 tensor that MulBackward0
saves (8 B a block, 24 B more at the peak, measured) where the trace's Scalar overload saves none.
"""

import torch
from torch import Tensor, nn

from .specs import TrainingSpecs

VOCAB = 128
WIDTH = 64
BLOCKS = 3
SEQ_LEN = 32


class TiedListInplace(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList([nn.Linear(WIDTH, WIDTH) for _ in range(BLOCKS)])
        self.norm = nn.LayerNorm(WIDTH)
        self.register_buffer("decay", torch.tensor(0.5))

    def forward(self, tokens: Tensor) -> Tensor:
        h = self.embed(tokens)
        outs = []
        for block in self.blocks:
            y = block(h)
            y.relu_()
            h = h + y
            h.mul_(self.decay)
            outs.append(h)
        stacked = torch.stack(outs, 0).mean(0)
        return nn.functional.linear(self.norm(stacked), self.embed.weight)


def build() -> nn.Module:
    return TiedListInplace()


def training_specs(batch: int = 8) -> TrainingSpecs:
    tokens = f"int64[{batch * SEQ_LEN}]:0..{VOCAB}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
