"""nn.TransformerEncoder itself, scripted: forward(src, mask=None, src_key_padding_mask=None).

Stands for the models users script straight from a library, whose forward has optional
arguments with defaults (attention masks, padding masks). A run gives the inputs it has and
leaves the others to their defaults, as a Python call would: acprof profiles this model from
one --input, and the rewritten model keeps forward's defaults, so that callers who leave the
masks out, or pass them, still can.

    input  float32[B, T, 64]
    nn.TransformerEncoder: 2 x TransformerEncoderLayer(d_model 64, 4 heads, ffn 128,
        dropout 0.1, ReLU, batch_first)
    output float32[B, T, 64]; loss mean
"""

import warnings
from dataclasses import dataclass

from torch import nn

from .specs import TrainingSpecs

# torch.jit.script of torch 1.13's own TransformerEncoder(Layer) warns about its __constants__
# on every export; nothing here can act on it.
warnings.filterwarnings("ignore", message="'(batch_first|norm)' was found in ScriptModule constants")


@dataclass(frozen=True)
class EncoderMasksConfig:
    layers: int = 2
    width: int = 64
    heads: int = 4
    ffn: int = 128
    seq_len: int = 64
    dropout: float = 0.1


def build(config: EncoderMasksConfig = EncoderMasksConfig()) -> nn.Module:
    layer = nn.TransformerEncoderLayer(config.width, config.heads, dim_feedforward=config.ffn,
                                       dropout=config.dropout, batch_first=True)
    # enable_nested_tensor only matters for the inference fast path.
    return nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)


def training_specs(config: EncoderMasksConfig = EncoderMasksConfig(), batch: int = 8) -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{batch},{config.seq_len},{config.width}]"], target="", loss="mean")
