"""A small language model whose layers run in a constant-trip-count loop over one block.

Stands for weight-shared ("looped" / universal-transformer, ALBERT-style) models and for
any scripted model that writes `for _ in range(n): x = self.block(x)`: scripted, the whole
trunk is one prim::Loop with a constant trip count, its body the block's computation, so
every activation of the trunk is made inside the loop.

    input  int64[B, T] token ids in 0..vocab
    token embedding + learned position embedding (positions from a buffer, as in gpt.py)
    6 x the same block: x = x + Linear(256, 64)(GELU(Linear(64, 256)(LayerNorm(x))))
    final LayerNorm -> Linear(64, vocab)
    output float32[B, T, vocab] logits; target int64[B, T] in 0..vocab, loss cross_entropy.

Traced, the loop unrolls into six copies of the block that read the same parameters: a
checkpoint segment then holds some uses of a weight while the uses after it were already
added to the engine's running sum of its gradient (as in a traced recurrent model).
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .specs import TrainingSpecs


@dataclass(frozen=True)
class LoopLmConfig:
    iterations: int = 6
    width: int = 64
    hidden: int = 256
    seq_len: int = 64
    vocab: int = 128


class ResidualMlpBlock(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.expand = nn.Linear(width, hidden)
        self.activation = nn.GELU()
        self.contract = nn.Linear(hidden, width)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.contract(self.activation(self.expand(self.norm(x))))


class LoopLm(nn.Module):
    # A constant for TorchScript, so range() gets a constant trip count.
    __constants__ = ["iterations"]

    def __init__(self, config: LoopLmConfig):
        super().__init__()
        self.iterations = config.iterations
        self.token_embedding = nn.Embedding(config.vocab, config.width)
        self.position_embedding = nn.Embedding(config.seq_len, config.width)
        self.register_buffer("position_ids", torch.arange(config.seq_len).unsqueeze(0))
        self.block = ResidualMlpBlock(config.width, config.hidden)
        self.ln_final = nn.LayerNorm(config.width)
        self.head = nn.Linear(config.width, config.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        positions = self.position_ids[:, : tokens.size(1)]
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        for _ in range(self.iterations):
            x = self.block(x)
        return self.head(self.ln_final(x))


def build(config: LoopLmConfig = LoopLmConfig()) -> nn.Module:
    return LoopLm(config)


def training_specs(config: LoopLmConfig = LoopLmConfig(), batch: int = 8) -> TrainingSpecs:
    tokens = f"int64[{batch},{config.seq_len}]:0..{config.vocab}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
