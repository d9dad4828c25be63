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


# The small Llama of pytorch/pytorch#197838's kind (activation_memory_budget's peak not monotone):
# grouped-query attention, two layers, sized so that activations are most of a step's peak at
# SMALL_LLAMA_TOKENS. bench/budget_sweep.py sweeps it; tests/python/fit_compiled_test.py fits it.
SMALL_LLAMA_VOCAB = 512
SMALL_LLAMA_TOKENS = (4, 128)


def small_llama() -> nn.Module:
    """LlamaForCausalLM from a config: hidden 128, 4 heads over 2 key/value heads, vocabulary
    SMALL_LLAMA_VOCAB, seeded 0."""
    torch.manual_seed(0)
    return build("LlamaForCausalLM", "LlamaConfig", vocab_size=SMALL_LLAMA_VOCAB, hidden_size=128,
                 intermediate_size=512, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 max_position_embeddings=256)


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
