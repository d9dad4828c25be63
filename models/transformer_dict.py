"""A pre-LayerNorm nn.TransformerEncoder language-model body that returns a dict, scripted.

Stands for the encoders users build from PyTorch's own modules (nn.TransformerEncoder over
nn.TransformerEncoderLayer with norm_first=True, batch_first=True) and for models that, like
Hugging Face's, return their outputs by name. Scripted, nn.MultiheadAttention and the
encoder's checks (F.multi_head_attention_forward, the nested-tensor fast path) put prim::If
nodes with raise branches and prim::Uninitialized values into the graph.

    input  int64[B, T] token ids in 0..vocab
    token embedding + learned position embedding (positions from a buffer, as in gpt.py)
    nn.TransformerEncoder: 3 x TransformerEncoderLayer(d_model 64, 4 heads, ffn 128,
        dropout 0.1, ReLU, norm_first, batch_first), final LayerNorm
    output Dict[str, Tensor]: {"logits": float32[B, T, vocab], "hidden": float32[B, T, 64]}
    target int64[B, T] in 0..vocab; loss cross_entropy. acprof takes the output's tensors
    in order (profiler/recorder/src/training_step.cpp computeLoss) and cross_entropy uses
    the first, "logits"; "hidden" is returned but not part of the loss.
"""

import warnings
from dataclasses import dataclass
from typing import Dict

import torch
from torch import Tensor, nn

from .specs import TrainingSpecs

# torch.jit.script of torch 1.13's own TransformerEncoder(Layer) warns about its __constants__
# on every export; nothing here can act on it.
warnings.filterwarnings("ignore", message="'(batch_first|norm)' was found in ScriptModule constants")


@dataclass(frozen=True)
class TransformerDictConfig:
    layers: int = 3
    width: int = 64
    heads: int = 4
    ffn: int = 128
    seq_len: int = 64
    vocab: int = 128
    dropout: float = 0.1


class TransformerDict(nn.Module):
    def __init__(self, config: TransformerDictConfig):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab, config.width)
        self.position_embedding = nn.Embedding(config.seq_len, config.width)
        self.register_buffer("position_ids", torch.arange(config.seq_len).unsqueeze(0))
        layer = nn.TransformerEncoderLayer(
            config.width, config.heads, dim_feedforward=config.ffn, dropout=config.dropout,
            batch_first=True, norm_first=True)
        # enable_nested_tensor only matters for the inference fast path (and warns with norm_first).
        self.encoder = nn.TransformerEncoder(
            layer, config.layers, norm=nn.LayerNorm(config.width), enable_nested_tensor=False)
        self.head = nn.Linear(config.width, config.vocab)

    def forward(self, tokens: Tensor) -> Dict[str, Tensor]:
        positions = self.position_ids[:, : tokens.size(1)]
        hidden = self.encoder(self.token_embedding(tokens) + self.position_embedding(positions))
        return {"logits": self.head(hidden), "hidden": hidden}


def build(config: TransformerDictConfig = TransformerDictConfig()) -> nn.Module:
    return TransformerDict(config)


def training_specs(config: TransformerDictConfig = TransformerDictConfig(), batch: int = 8) -> TrainingSpecs:
    tokens = f"int64[{batch},{config.seq_len}]:0..{config.vocab}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
