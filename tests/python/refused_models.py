"""Models acprof refuses, each for one reason, shared by the Python door's tests (fit_test.py) and
the command line's (eager_cli_check.py, which names this file as the factory `--module` loads)."""

import torch
from torch import nn


class ReturnsInt(nn.Module):
    """An output with no floating-point tensor to take a loss of."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return int(self.fc(x).sum() > 0)


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class CallsACustomFunction(nn.Module):
    """A custom autograd Function in forward: its backward is not aten ops the recording could carry."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return self.fc(Cube.apply(self.fc(x)))


def returns_int():
    return ReturnsInt()


def calls_a_custom_function():
    return CallsACustomFunction()
