"""A GPT-style decoder: token and position embeddings, pre-LayerNorm blocks with causal
self-attention and a 4x GELU MLP, a final LayerNorm and a Linear head to the vocabulary.

    input  int64[B, T] token ids in 0..vocab
    output float32[B, T, vocab] logits
    target int64[B, T] in 0..vocab; loss cross_entropy (acprof flattens to [B*T, vocab])

Block: x = x + dropout(attention(ln1(x))); x = x + dropout(mlp(ln2(x))).
The head is not tied to the token embedding (GPT-2 ties them): a tied head would be one
parameter used twice, which is a different case than the one these models exercise.
Positions come from a buffer so the traced graph holds no device-bound arange.
Both torch.jit.trace and torch.jit.script accept it.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import SelfAttention
from .feed_forward import FeedForward
from .sdpa_attention import SdpaSelfAttention
from .specs import TrainingSpecs


@dataclass(frozen=True)
class GptConfig:
    layers: int = 2
    width: int = 64
    heads: int = 4
    seq_len: int = 32
    vocab: int = 128
    dropout: float = 0.1
    # "written_out": matmul, mask and softmax (attention.py); "sdpa": one
    # F.scaled_dot_product_attention call (sdpa_attention.py), as PyTorch 2.x models have.
    attention: str = "written_out"


# GPT-2 small's shape (124M with a tied head; 163M here, untied).
GPT2_SMALL = GptConfig(layers=12, width=768, heads=12, seq_len=1024, vocab=50257, dropout=0.1)


class DecoderBlock(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.width)
        if config.attention == "sdpa":
            self.attention = SdpaSelfAttention(config.width, config.heads, config.dropout)
        else:
            self.attention = SelfAttention(config.width, config.heads, config.dropout, causal_len=config.seq_len)
        self.residual_dropout = nn.Dropout(config.dropout)
        self.ln2 = nn.LayerNorm(config.width)
        self.mlp = FeedForward(config.width, config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.residual_dropout(self.attention(self.ln1(x)))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, config: GptConfig):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab, config.width)
        self.position_embedding = nn.Embedding(config.seq_len, config.width)
        self.register_buffer("position_ids", torch.arange(config.seq_len).unsqueeze(0))
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.blocks = nn.Sequential(*[DecoderBlock(config) for _ in range(config.layers)])
        self.ln_final = nn.LayerNorm(config.width)
        self.head = nn.Linear(config.width, config.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        positions = self.position_ids[:, : tokens.size(1)]
        x = self.embedding_dropout(self.token_embedding(tokens) + self.position_embedding(positions))
        return self.head(self.ln_final(self.blocks(x)))


def build(config: GptConfig = GptConfig()) -> nn.Module:
    return Gpt(config)


def training_specs(config: GptConfig = GptConfig(), batch: int = 4) -> TrainingSpecs:
    tokens = f"int64[{batch},{config.seq_len}]:0..{config.vocab}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
