"""Causal multi-head self-attention through F.scaled_dot_product_attention, as PyTorch 2.x
users write it (nanoGPT, Hugging Face's "sdpa" attention): one aten::scaled_dot_product_attention
call with its own dropout, which acprof must recompute with the same mask.

Dropout is applied only in training, as those models do: `dropout_p=self.dropout if
self.training else 0.0`.
"""

from torch import Tensor, nn
from torch.nn import functional as F


class SdpaSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float):
        super().__init__()
        if width % heads != 0:
            raise ValueError(f"width {width} is not divisible by heads {heads}; pick a width that is")
        self.heads = heads
        self.head_width = width // heads
        self.dropout = dropout
        self.qkv = nn.Linear(width, 3 * width)
        self.projection = nn.Linear(width, width)

    def _split_heads(self, x: Tensor) -> Tensor:
        # [B, T, width] -> [B, heads, T, head_width]
        return x.view(x.size(0), x.size(1), self.heads, self.head_width).transpose(1, 2)

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return self.projection(y.transpose(1, 2).contiguous().view(batch, length, width))
