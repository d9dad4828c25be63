"""A BERT-style encoder classifier: embeddings (token + position, LayerNorm, dropout),
post-LayerNorm encoder layers with bidirectional self-attention and a 4x GELU MLP, and a
Linear classifier on the first token's final state.

    input  int64[B, T] token ids in 0..vocab
    output float32[B, classes] logits
    target int64[B] in 0..classes; loss cross_entropy

Layer: x = ln1(x + dropout(attention(x))); x = ln2(x + dropout(mlp(x))).
There is no padding mask: every position is a token. Attention is written by hand
(attention.py) because nn.MultiheadAttention does not script alike across torch versions.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import SelfAttention
from .feed_forward import FeedForward
from .specs import TrainingSpecs


@dataclass(frozen=True)
class BertConfig:
    layers: int = 2
    width: int = 64
    heads: int = 4
    seq_len: int = 32
    vocab: int = 128
    classes: int = 4
    dropout: float = 0.1


class EncoderLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = SelfAttention(config.width, config.heads, config.dropout)
        self.attention_output_dropout = nn.Dropout(config.dropout)
        self.ln1 = nn.LayerNorm(config.width)
        self.mlp = FeedForward(config.width, config.dropout)
        self.ln2 = nn.LayerNorm(config.width)

    def forward(self, x: Tensor) -> Tensor:
        x = self.ln1(x + self.attention_output_dropout(self.attention(x)))
        return self.ln2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab, config.width)
        self.position_embedding = nn.Embedding(config.seq_len, config.width)
        self.register_buffer("position_ids", torch.arange(config.seq_len).unsqueeze(0))
        self.embedding_ln = nn.LayerNorm(config.width)
        self.embedding_dropout = nn.Dropout(config.dropout)
        self.layers = nn.Sequential(*[EncoderLayer(config) for _ in range(config.layers)])
        self.classifier_dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.width, config.classes)

    def forward(self, tokens: Tensor) -> Tensor:
        positions = self.position_ids[:, : tokens.size(1)]
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        x = self.layers(self.embedding_dropout(self.embedding_ln(x)))
        return self.classifier(self.classifier_dropout(x[:, 0]))


def build(config: BertConfig = BertConfig()) -> nn.Module:
    return Bert(config)


def training_specs(config: BertConfig = BertConfig(), batch: int = 4) -> TrainingSpecs:
    return TrainingSpecs(
        inputs=[f"int64[{batch},{config.seq_len}]:0..{config.vocab}"],
        target=f"int64[{batch}]:0..{config.classes}",
        loss="cross_entropy",
    )
