"""A character language model that steps an nn.LSTMCell over the sequence in Python.

Stands for the recurrent models users write by hand (a decoder that feeds its state
back, a ConvLSTM): traced, the loop unrolls into one copy of the cell per time step.
LibTorch's trace records the cell as its decomposition: the gates are cut with
unsafe_chunk and activated in place (sigmoid_, tanh_), and the new cell state is
summed in place (c = f * c + i * g) and handed back in a tuple. Each of those writes
a piece of a list or an element of a tuple, which LibTorch's alias analysis counts
as "any tensor that was ever in a list or tuple"; acprof's legality facts narrow it
to the tensor written (profiler/graph/src/cut_facts.cpp), or no segment is legal.

    input  int64[B, T] token ids in 0..vocab
    Embedding(vocab, 32) -> for each step: LSTMCell(32, 128) -> Linear(128, vocab)
    output float32[B, T, vocab] logits; target int64[B, T] in 0..vocab, loss cross_entropy.

Scripted, the loop's trip count is the input's length, so it stays one prim::Loop node.
"""

from dataclasses import dataclass
from typing import List

import torch
from torch import Tensor, nn

from .specs import TrainingSpecs


@dataclass(frozen=True)
class LstmCellLmConfig:
    width: int = 32
    hidden: int = 128
    seq_len: int = 32
    vocab: int = 64


class LstmCellLm(nn.Module):
    def __init__(self, config: LstmCellLmConfig):
        super().__init__()
        self.hidden = config.hidden
        self.embedding = nn.Embedding(config.vocab, config.width)
        self.cell = nn.LSTMCell(config.width, config.hidden)
        self.head = nn.Linear(config.hidden, config.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embedding(tokens)
        h = torch.zeros(tokens.size(0), self.hidden)
        c = torch.zeros(tokens.size(0), self.hidden)
        logits: List[Tensor] = []
        for t in range(tokens.size(1)):
            h, c = self.cell(x[:, t], (h, c))
            logits.append(self.head(h))
        return torch.stack(logits, 1)


def build(config: LstmCellLmConfig = LstmCellLmConfig()) -> nn.Module:
    return LstmCellLm(config)


def training_specs(config: LstmCellLmConfig = LstmCellLmConfig(), batch: int = 16) -> TrainingSpecs:
    tokens = f"int64[{batch},{config.seq_len}]:0..{config.vocab}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
