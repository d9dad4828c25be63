"""The transformer MLP shared by gpt.py and bert.py: Linear(width, 4*width) -> GELU ->
Linear(4*width, width) -> Dropout (the dropout on the residual branch)."""

from torch import Tensor, nn


class FeedForward(nn.Module):
    def __init__(self, width: int, dropout: float):
        super().__init__()
        self.expand = nn.Linear(width, 4 * width)
        self.activation = nn.GELU()
        self.contract = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.contract(self.activation(self.expand(x))))
