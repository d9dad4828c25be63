"""Multi-head self-attention written out with Linear, matmul and softmax.

Written by hand rather than with nn.MultiheadAttention because that module's fused
fast paths and its scripting support differ between torch versions (1.13 on Debian,
2.x on the GPU machine), and acprof must see the same graph on both.

Nothing here creates a tensor with a fixed device: the causal mask is a buffer, so a
model traced on the CPU still runs after it is moved to CUDA.
"""

import math
from typing import Optional

import torch
from torch import Tensor, nn


class SelfAttention(nn.Module):
    """Attention over all positions of [B, T, width], or over earlier ones when causal.

    ``causal_len`` > 0 makes the attention causal for sequences up to that length; the
    mask is a bool buffer of shape [1, 1, causal_len, causal_len].
    """

    def __init__(self, width: int, heads: int, dropout: float, causal_len: int = 0):
        super().__init__()
        if width % heads != 0:
            raise ValueError(f"width {width} is not divisible by heads {heads}; pick a width that is")
        self.heads = heads
        self.head_width = width // heads
        self.scale = 1.0 / math.sqrt(self.head_width)
        self.qkv = nn.Linear(width, 3 * width)
        self.projection = nn.Linear(width, width)
        self.attention_dropout = nn.Dropout(dropout)
        mask: Optional[Tensor] = None
        if causal_len > 0:
            mask = torch.tril(torch.ones(causal_len, causal_len, dtype=torch.bool)).view(1, 1, causal_len, causal_len)
        self.register_buffer("causal_mask", mask)

    def _split_heads(self, x: Tensor) -> Tensor:
        # [B, T, width] -> [B, heads, T, head_width]
        return x.view(x.size(0), x.size(1), self.heads, self.head_width).transpose(1, 2)

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if self.causal_mask is not None:
            visible = self.causal_mask[:, :, :length, :length]
            scores = scores.masked_fill(visible.logical_not(), float("-inf"))
        probabilities = self.attention_dropout(torch.softmax(scores, dim=-1))
        y = torch.matmul(probabilities, v).transpose(1, 2).contiguous().view(batch, length, width)
        return self.projection(y)
