"""Hugging Face transformers models as acprof trains them: called with their tensors alone (by name),
returning the one logits tensor a loss is taken of. A transformers model's own forward takes a
dozen optional arguments (masks, caches, labels) and returns a tuple or a ModelOutput; acprof wants
one input spec per forward argument and a tensor to take the loss of. The zoo (scripts/zoo_export.py)
and the head-to-head benchmark (models/bench_models.py) both build their transformers models so.
"""

import torch
from torch import nn


def build(model_class: str, config_class: str, **config) -> nn.Module:
    """transformers.<model_class>(transformers.<config_class>(**config)) with SDPA attention and no
    cache, random weights (seeded by the caller), in training mode, called with its token ids."""
    import transformers
    made = getattr(transformers, config_class)(attn_implementation="sdpa", use_cache=False, **config)
    return TokenLogits(getattr(transformers, model_class)(made)).train()


class TokenLogits(nn.Module):
    """A transformers model called with its token ids only, returning the logits tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, return_dict=False)[0]


class SignalLogits(nn.Module):
    """The same for a model of pixels or of a waveform, called with that one named argument."""

    def __init__(self, model: nn.Module, argument: str):
        super().__init__()
        self.model = model
        self.argument = argument

    def forward(self, signal: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.argument: signal}, return_dict=False)[0]


class EncoderDecoderLogits(nn.Module):
    """The same for an encoder-decoder model (T5): the encoder's and the decoder's token ids, passed
    by name (T5's second positional argument is the encoder's attention mask)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, return_dict=False)[0]
